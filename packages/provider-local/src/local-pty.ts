import { existsSync } from "node:fs";
import {
  type DriverExit,
  type DriverPty,
  type DriverPtyRequest,
  optionalPackageError,
} from "@sbox/core/spec";
import { type CommandSettings, type CommandTarget, planLaunch } from "./local-command.js";
import { localError, throwIfAborted } from "./local-errors.js";
import { ensureSandboxNamespace, NAMESPACE_CHILD_FD, sharesPidNamespace } from "./local-holder.js";
import { newLocalId } from "./local-ids.js";
import type { ResolvedIsolation } from "./local-isolation.js";
import { COMMAND_TAG_VARIABLE, signalName, signalTree } from "./local-procfs.js";

interface PtyProcess {
  readonly pid: number;
  onData(listener: (data: Buffer | string) => void): unknown;
  onExit(listener: (event: { exitCode: number; signal?: number }) => void): unknown;
  write(data: string | Buffer): void;
  resize(cols: number, rows: number): void;
  kill(signal?: string): void;
}

interface PtyModule {
  spawn(file: string, args: string[], options: Record<string, unknown>): PtyProcess;
}

let ptyModule: Promise<PtyModule> | undefined;

/** node-pty, loaded on the first pty only: importing the provider never loads a native addon. */
function loadPty(): Promise<PtyModule> {
  ptyModule ??= import("node-pty").then(
    (mod) => {
      const candidate = mod as unknown as Partial<PtyModule> & { default?: Partial<PtyModule> };
      const spawn = candidate.spawn ?? candidate.default?.spawn;
      if (typeof spawn !== "function") throw new Error("node-pty has no spawn export");
      return { spawn } as PtyModule;
    },
    (error: unknown) => {
      ptyModule = undefined;
      // node-pty is an optional peer: only terminals need it (and its native addon).
      throw optionalPackageError(
        error,
        "node-pty",
        "a pty (interactive terminal) of the local provider",
        "local",
      );
    },
  );
  return ptyModule;
}

/**
 * Opens an interactive terminal in the sandbox: the given command, or an interactive shell (bash when the
 * host has it). Under bubblewrap the terminal's program dies with this host program.
 */
export async function createPty(
  settings: CommandSettings,
  isolation: ResolvedIsolation,
  target: CommandTarget,
  request: DriverPtyRequest,
): Promise<DriverPty> {
  throwIfAborted(request.signal, "pty.create");
  const pty = await loadPty();
  const tag = newLocalId();
  const shell = existsSync("/bin/bash") ? "/bin/bash" : settings.shell;
  // node-pty cannot pass extra descriptors: a shell opens the namespace as fd 3, then becomes bubblewrap.
  const holder =
    isolation.mode === "bwrap" && sharesPidNamespace(isolation)
      ? await ensureSandboxNamespace(settings, isolation, target)
      : undefined;
  const planned = planLaunch(
    { ...settings, shell: request.command === undefined ? shell : settings.shell },
    isolation,
    target,
    {
      command: request.command === undefined ? undefined : { shell: request.command },
      cwd: request.cwd,
      env: request.env,
      tag,
      foreground: true,
      extraEnv: { TERM: "xterm-256color" },
      pidNamespaceFd: holder === undefined ? undefined : NAMESPACE_CHILD_FD,
    },
  );
  if ("cwdProblem" in planned) throw localError("Validation", planned.cwdProblem.trim());
  const plan =
    holder === undefined
      ? planned
      : {
          ...planned,
          file: settings.shell,
          args: [
            "-c",
            `exec ${NAMESPACE_CHILD_FD}<"$1"; shift; exec "$@"`,
            "sh",
            `/proc/${holder}/ns/pid`,
            planned.file,
            ...planned.args,
          ],
        };
  let child: PtyProcess;
  try {
    child = pty.spawn(plan.file, [...plan.args], {
      name: "xterm-256color",
      cols: request.cols,
      rows: request.rows,
      cwd: plan.cwd,
      env: plan.env,
      encoding: null,
    });
  } catch (error) {
    throw localError("Provider", `could not open a pty: ${(error as Error).message}`, error);
  }
  const exited = new Promise<DriverExit>((resolve) => {
    child.onExit(({ exitCode, signal }) => {
      const name = signal ? signalName(signal) : undefined;
      resolve(name ? { exitCode: 128 + (signal ?? 0), signal: name } : { exitCode });
    });
  });
  child.onData((data) => request.onData(typeof data === "string" ? Buffer.from(data) : data));
  const tree = { name: COMMAND_TAG_VARIABLE, value: tag };
  return {
    pid: child.pid,
    async write(data) {
      child.write(typeof data === "string" ? data : Buffer.from(data));
    },
    async resize(cols, rows) {
      child.resize(cols, rows);
    },
    async kill() {
      await signalTree(tree, "SIGKILL", { groups: [child.pid] });
    },
    wait: () => exited,
  };
}
