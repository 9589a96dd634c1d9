import { existsSync } from "node:fs";
import {
  type DriverExit,
  type DriverPty,
  type DriverPtyRequest,
  optionalPackageError,
} from "@sbox/core/spec";
import type { CommandTarget } from "./local-command.js";
import { localError, throwIfAborted } from "./local-errors.js";
import { type CommandContext, cleanUpLaunch, planCommand } from "./local-exec.js";
import { newLocalId } from "./local-ids.js";
import { signalName, signalTree } from "./local-procfs.js";

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
  context: CommandContext,
  target: CommandTarget,
  request: DriverPtyRequest,
): Promise<DriverPty> {
  throwIfAborted(request.signal, "pty.create");
  const pty = await loadPty();
  const tag = newLocalId();
  // The launchers open what they need themselves (node-pty cannot pass extra descriptors).
  const plan = await planCommand(context, target, {
    command: request.command === undefined ? undefined : { shell: request.command },
    cwd: request.cwd,
    env: request.env,
    tag,
    session: "terminal",
    extraEnv: { TERM: "xterm-256color" },
    terminalShell: existsSync("/bin/bash") ? "/bin/bash" : context.settings.shell,
  });
  if ("cwdProblem" in plan) throw localError("Validation", plan.cwdProblem.trim());
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
    cleanUpLaunch(plan, true);
    throw localError("Provider", `could not open a pty: ${(error as Error).message}`, error);
  }
  const exited = new Promise<DriverExit>((resolve) => {
    child.onExit(({ exitCode, signal }) => {
      cleanUpLaunch(plan, true);
      const name = signal ? signalName(signal) : undefined;
      resolve(name ? { exitCode: 128 + (signal ?? 0), signal: name } : { exitCode });
    });
  });
  child.onData((data) => request.onData(typeof data === "string" ? Buffer.from(data) : data));
  return {
    pid: child.pid,
    async write(data) {
      child.write(typeof data === "string" ? data : Buffer.from(data));
    },
    async resize(cols, rows) {
      child.resize(cols, rows);
    },
    async kill() {
      await signalTree(plan.find, "SIGKILL", { groups: [child.pid] });
    },
    wait: () => exited,
  };
}
