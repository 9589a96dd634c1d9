/**
 * A test-only provider that offers nothing but one buffered exec primitive over `sh -c` on this machine,
 * so that every core emulation runs on a real shell. Two userlands: `dash` with the host's GNU tools, and
 * `busybox sh` with only busybox applets on PATH (proves the emulations need no GNU-only flags).
 *
 * `exitCodes: false` hides the exit code (forces E2), `envCwd: false` ignores cwd/env (forces E1).
 */
import { spawn } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  argvScript,
  type CapabilityFlags,
  type DriverExecRequest,
  type DriverExecResult,
  type DriverSandbox,
  defineProvider,
  type ExecStdin,
  SandboxError,
  type SandboxProvider,
} from "../src/spec/index.js";

export type Userland = "dash" | "busybox";

export interface ShDriverOptions {
  userland: Userland;
  /** Report exit codes natively (default true); false forces the E2 marker. */
  exitCodes?: boolean;
  /** Honour cwd/env natively (default false, which forces E1). */
  envCwd?: boolean;
  /**
   * What the exec primitive takes on stdin (default true: any bytes, the `stdin` capability native);
   * `"text"`: valid UTF-8 only, like Fly's exec (declared as `execStdin: "text"`); false: nothing.
   */
  stdin?: boolean | "text";
  /** Offer list and stop/resume natively, keeping metadata (default false). */
  lifecycle?: boolean;
  /**
   * Return stdout and stderr as text (decoded as UTF-8, so binary bytes are mangled), like providers whose
   * exec only has text (default false: raw bytes).
   */
  textOutput?: boolean;
}

let busyboxBin: string | undefined;
/**
 * A directory holding only busybox applet links, used as the whole PATH of the busybox userland. One per
 * user and applet list, shared by every test file and run: each test file is a module of its own, and a
 * directory per module was never removed (a worker's exit hooks do not run under vitest).
 */
function busyboxPath(): string {
  if (busyboxBin && existsSync(busyboxBin)) return busyboxBin;
  const applets = [
    "sh",
    "ash",
    "cat",
    "cp",
    "mv",
    "rm",
    "mkdir",
    "ls",
    "stat",
    "find",
    "head",
    "tail",
    "dd",
    "base64",
    "od",
    "tr",
    "sed",
    "awk",
    "grep",
    "sleep",
    "kill",
    "setsid",
    "printf",
    "echo",
    "test",
    "[",
    "wc",
    "tar",
    "mkfifo",
    "env",
    "sh",
    "xargs",
    "sort",
    "cut",
    "date",
    "id",
    "pwd",
    "true",
    "false",
    "touch",
    "chmod",
    "ln",
    "readlink",
    "basename",
    "dirname",
    "du",
    "df",
    "ps",
    "pkill",
    "nproc",
    "uname",
    "seq",
    "yes",
    "mktemp",
    "timeout",
    "realpath",
    "expr",
    "tee",
    "cmp",
    "md5sum",
    "sha256sum",
    "hexdump",
    "xxd",
    "usleep",
    "truncate",
    "rmdir",
    "which",
    "nohup",
  ];
  const names = [...new Set(applets)].sort();
  const digest = createHash("sha256").update(names.join("\n")).digest("hex").slice(0, 12);
  const shared = join(tmpdir(), `sbox-busybox-applets-${process.getuid?.() ?? 0}-${digest}`);
  if (!ownDirectory(shared)) {
    // Built aside and renamed into place, so a test file running at the same time sees all or nothing.
    const building = mkdtempSync(`${shared}.building-`);
    for (const applet of names) symlinkSync("/usr/bin/busybox", join(building, applet));
    try {
      renameSync(building, shared);
    } catch {
      rmSync(building, { recursive: true, force: true });
    }
  }
  // /tmp is shared: a path another user planted (or a symlink) is not used; this run gets its own then.
  busyboxBin = ownDirectory(shared) ? shared : mkdtempSync(join(tmpdir(), "sbox-busybox-"));
  if (busyboxBin !== shared) {
    for (const applet of names) symlinkSync("/usr/bin/busybox", join(busyboxBin, applet));
  }
  return busyboxBin;
}

/** Whether `path` is a real directory (not a symlink) owned by this user. */
function ownDirectory(path: string): boolean {
  try {
    const stat = lstatSync(path);
    return stat.isDirectory() && stat.uid === (process.getuid?.() ?? 0);
  } catch {
    return false;
  }
}

interface ShNative {
  root: string;
}

interface ShRecord extends ShNative {
  metadata: Record<string, string>;
  state: "running" | "stopped";
  createdAt: Date;
}

/** The capability map of the sh driver: only the exec primitive, everything emulatable is emulated. */
export const shDriverCapabilities = {
  list: "unsupported",
  stop: "unsupported",
  pause: "unsupported",
  setTimeout: "unsupported",
  streaming: "emulated",
  background: "emulated",
  killProcess: "emulated",
  stdin: "emulated",
  pty: "unsupported",
  filesWatch: "emulated",
  filesUpload: "emulated",
  codeInterpreter: "unsupported",
  statefulKernel: "unsupported",
  exposePort: "unsupported",
  privatePreview: "unsupported",
  egressControl: "unsupported",
  ssh: "unsupported",
  proxiedFetch: "unsupported",
  snapshot: "unsupported",
  fork: "unsupported",
  volumes: "unsupported",
  gpu: "unsupported",
  region: "unsupported",
  secretsVault: "unsupported",
  metrics: "emulated",
} as const;

/** The flags of the sh driver with native exit codes and cwd/env (options turn these two off). */
export const shDriverFlags: CapabilityFlags = {
  perCommandEnvCwd: true,
  exitCodeNative: true,
  preservesDiskOnStop: false,
  preservesMemoryOnPause: false,
  previewModel: "none",
  nativeExpiry: false,
  snapshotFilesystemOnly: true,
};

/** Builds the test-only sh provider. Every sandbox is a fresh temporary directory on this machine. */
export function shDriver(options: ShDriverOptions): SandboxProvider<typeof shDriverCapabilities, ShNative> & {
  /** Removes every sandbox directory this provider created. */
  cleanup(): void;
  /** Command lines passed to the shell, longest first: lets tests assert the 64 KiB bound. */
  readonly longestCommandBytes: () => number;
} {
  const exitCodes = options.exitCodes ?? true;
  const envCwd = options.envCwd ?? false;
  const acceptsStdin = options.stdin ?? true;
  const lifecycle = options.lifecycle ?? false;
  const base = mkdtempSync(join(tmpdir(), `sbox-sh-${options.userland}-`));
  const sandboxes = new Map<string, ShRecord>();
  let longest = 0;

  const exec = (sandbox: DriverSandbox<ShNative>, request: DriverExecRequest): Promise<DriverExecResult> =>
    new Promise((resolve, reject) => {
      if (request.signal.aborted) return reject(new SandboxError("Aborted", "exec aborted before start"));
      const script = "shell" in request.command ? request.command.shell : argvScript(request.command.argv);
      longest = Math.max(longest, Buffer.byteLength(script));
      const shell =
        options.userland === "dash"
          ? ["/usr/bin/dash", "-c", script]
          : ["/usr/bin/busybox", "sh", "-c", script];
      const env: Record<string, string> =
        options.userland === "busybox"
          ? { PATH: busyboxPath(), HOME: sandbox.native.root, TMPDIR: join(sandbox.native.root, "tmp") }
          : { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: sandbox.native.root, LANG: "C.UTF-8" };
      if (envCwd && request.env) Object.assign(env, request.env);
      const child = spawn(shell[0]!, shell.slice(1), {
        cwd: envCwd && request.cwd ? request.cwd : sandbox.native.root,
        env,
        stdio: ["pipe", "pipe", "pipe"],
      });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on("data", (b: Buffer) => out.push(b));
      child.stderr.on("data", (b: Buffer) => err.push(b));
      child.stdin.on("error", () => {});
      if (acceptsStdin === "text" && request.stdin instanceof Uint8Array) {
        try {
          new TextDecoder("utf-8", { fatal: true }).decode(request.stdin);
        } catch {
          child.kill("SIGKILL");
          return reject(new SandboxError("Validation", "this exec takes stdin as UTF-8 text only"));
        }
      }
      if (acceptsStdin && request.stdin instanceof Uint8Array) child.stdin.end(request.stdin);
      else child.stdin.end();
      const onAbort = () => child.kill("SIGKILL");
      request.signal.addEventListener("abort", onAbort, { once: true });
      child.on("error", (e) => reject(e));
      child.on("close", (code, signal) => {
        request.signal.removeEventListener("abort", onAbort);
        if (request.signal.aborted) return reject(new SandboxError("Aborted", "exec aborted"));
        const result: DriverExecResult = options.textOutput
          ? { stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") }
          : { stdout: Buffer.concat(out), stderr: Buffer.concat(err) };
        if (exitCodes) result.exitCode = code ?? 128 + 9;
        if (signal) result.signal = signal;
        resolve(result);
      });
    });

  const provider = defineProvider({
    specificationVersion: "v1",
    name: `sh-${options.userland}`,
    capabilities: {
      ...shDriverCapabilities,
      stdin: acceptsStdin === true ? "native" : "emulated",
      list: lifecycle ? "native" : "unsupported",
      stop: lifecycle ? "native" : "unsupported",
    } as typeof shDriverCapabilities,
    flags: { ...shDriverFlags, perCommandEnvCwd: envCwd, exitCodeNative: exitCodes },
    honours: ["metadata"],
    async doCreate(spec) {
      const id = randomUUID();
      const root = join(base, id);
      mkdirSync(join(root, "tmp"), { recursive: true });
      sandboxes.set(id, { root, metadata: { ...spec.metadata }, state: "running", createdAt: new Date() });
      return { id, native: { root } };
    },
    async doConnect(id) {
      const record = sandboxes.get(id);
      if (!record) throw new SandboxError("NotFound", `no sh sandbox ${id}`);
      return { id, native: { root: record.root } };
    },
    async doDestroy(sandbox) {
      rmSync(sandbox.native.root, { recursive: true, force: true });
      sandboxes.delete(sandbox.id);
    },
    async doGetInfo(sandbox) {
      const known = sandboxes.get(sandbox.id);
      if (!known) return { id: sandbox.id, state: "destroyed", metadata: {} };
      return { id: sandbox.id, state: known.state, metadata: known.metadata, createdAt: known.createdAt };
    },
    ...(lifecycle
      ? {
          async *doList() {
            for (const [id, record] of sandboxes) {
              yield { id, state: record.state, metadata: record.metadata, createdAt: record.createdAt };
            }
          },
          async doStop(sandbox: DriverSandbox<ShNative>) {
            const record = sandboxes.get(sandbox.id);
            if (record) record.state = "stopped";
          },
          async doResume(sandbox: DriverSandbox<ShNative>) {
            const record = sandboxes.get(sandbox.id);
            if (record) record.state = "running";
          },
        }
      : {}),
    doExec: exec,
    emulationStateDir: undefined,
    ...(acceptsStdin === "text" ? { execStdin: "text" as const } : {}),
  });
  return Object.assign(provider, {
    cleanup() {
      rmSync(base, { recursive: true, force: true });
    },
    longestCommandBytes: () => longest,
  });
}

/** What an exec of the sh driver with these options takes on stdin, as an emulation context says it. */
export function execStdinFor(stdin: ShDriverOptions["stdin"]): ExecStdin {
  if (stdin === "text") return "text";
  return (stdin ?? true) ? "bytes" : "none";
}

/** Lists the sh-driver variants every emulation test runs under. */
export const USERLANDS: readonly Userland[] = ["dash", "busybox"];

/** True when busybox is installed (the test run needs it; CI installs busybox-static). */
export function hasBusybox(): boolean {
  try {
    return readdirSync("/usr/bin").includes("busybox");
  } catch {
    return false;
  }
}
