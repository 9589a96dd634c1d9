import {
  abortErrorOf,
  argvScript,
  type DriverCommand,
  type DriverExecRequest,
  type DriverExit,
  type DriverOutputCallbacks,
  type DriverProcess,
  displayOfScript,
  type ProcessInfo,
  SandboxError,
  shellQuoteArgv,
} from "@sbox/core/spec";
import type { CommandHandle, CommandStartOpts } from "e2b";
import { exitFromE2B } from "./e2b-exit.js";
import { KILL_TREE_SCRIPT, signalForKill } from "./e2b-kill-tree.js";
import type { E2BDriverSandbox } from "./e2b-lifecycle.js";
import { watchLiveness } from "./e2b-liveness.js";
import { type CommandContext, sandboxCall } from "./e2b-sandbox-call.js";
import { unarySignal } from "./e2b-sdk.js";

export type { CommandContext } from "./e2b-sandbox-call.js";

/** Bytes per stdin request: the daemon takes stdin as base64 in one JSON message per call. */
const STDIN_CHUNK = 256 * 1024;
/** After an abort killed the tree, how long to wait for the daemon to report the end. */
const ABORT_SETTLE_MS = 5_000;

/**
 * The command line the SDK runs with `bash -l -c`: a shell snippet as is, argv quoted word by word and
 * run with `exec`, a missing program reported as a shell reports it (`argvScript`).
 */
export function commandLine(command: DriverCommand): string {
  if ("shell" in command) return command.shell;
  return argvScript(command.argv);
}

/**
 * Waits for a command handle and turns the SDK's result or `CommandExitError` into an exit; any other
 * failure is thrown as the SDK threw it (the provider's `mapError` maps it).
 */
export async function waitForExit(handle: CommandHandle): Promise<DriverExit> {
  try {
    const result = await handle.wait();
    return exitFromE2B(result.exitCode, result.error);
  } catch (error) {
    const e = error as { name?: unknown; exitCode?: unknown; error?: unknown };
    if (e.name === "CommandExitError" && typeof e.exitCode === "number") {
      return exitFromE2B(e.exitCode, typeof e.error === "string" ? e.error : undefined);
    }
    throw error;
  }
}

function startOptions(
  ctx: CommandContext,
  request: DriverExecRequest,
  callbacks: Partial<DriverOutputCallbacks>,
  stdin: boolean,
): CommandStartOpts & { background: true } {
  const opts: CommandStartOpts & { background: true } = {
    background: true,
    stdin,
    // The core enforces timeouts itself (and kills the whole tree); the daemon's own limit would only kill
    // the top process, so it is turned off.
    timeoutMs: 0,
  };
  if (request.cwd !== undefined) opts.cwd = request.cwd;
  if (request.env !== undefined) opts.envs = { ...request.env };
  const user = request.user ?? ctx.options.user;
  if (user !== undefined) opts.user = user;
  if (ctx.options.requestTimeoutMs !== undefined) opts.requestTimeoutMs = ctx.options.requestTimeoutMs;
  if (callbacks.onStdout) opts.onStdout = (chunk) => callbacks.onStdout?.(chunk);
  if (callbacks.onStderr) opts.onStderr = (chunk) => callbacks.onStderr?.(chunk);
  return opts;
}

async function start(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  request: DriverExecRequest,
  callbacks: Partial<DriverOutputCallbacks>,
  stdin: boolean,
  operation: string,
): Promise<CommandHandle> {
  if (request.signal.aborted) throw abortErrorOf(request.signal, `e2b ${operation}`);
  const line = commandLine(request.command);
  // Bounded by sandboxCall: the start of a command is one request (the stream stays open past it).
  return sandboxCall(ctx, sandbox.id, operation, request.signal, () =>
    sandbox.native.commands.run(line, startOptions(ctx, request, callbacks, stdin)),
  );
}

/** Sends bytes to a process's stdin in pieces the daemon takes in one request each. */
export async function sendStdin(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  pid: number,
  data: Uint8Array,
): Promise<void> {
  for (let offset = 0; offset < data.byteLength; offset += STDIN_CHUNK) {
    const piece = data.subarray(offset, Math.min(offset + STDIN_CHUNK, data.byteLength));
    await sandboxCall(ctx, sandbox.id, `stdin of process ${pid}`, undefined, () =>
      sandbox.native.commands.sendStdin(pid, piece, { signal: unarySignal(ctx.options) }),
    );
  }
}

async function feedStdin(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  pid: number,
  stdin: Uint8Array | ReadableStream<Uint8Array>,
  close: boolean,
): Promise<void> {
  if (stdin instanceof Uint8Array) {
    await sendStdin(ctx, sandbox, pid, stdin);
  } else {
    const reader = stdin.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (value && value.byteLength > 0) await sendStdin(ctx, sandbox, pid, value);
      }
    } finally {
      reader.releaseLock();
    }
  }
  if (close) {
    await sandboxCall(ctx, sandbox.id, `closing stdin of process ${pid}`, undefined, () =>
      sandbox.native.commands.closeStdin(pid, { signal: unarySignal(ctx.options) }),
    );
  }
}

/**
 * Signals a process and its whole tree (see {@link KILL_TREE_SCRIPT}). The helper runs as root so it may
 * signal processes of any user; where the daemon refuses root (a template or self-hosted envd without it
 * answers `permission_denied`) it runs as the commands' own user, which still reaches every process this
 * adapter started. NotFound when there is no such process.
 */
export async function killProcessTree(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  pid: number,
  signal: string,
  abort?: AbortSignal,
): Promise<void> {
  const name = signalForKill(signal);
  const line = shellQuoteArgv(["sh", "-c", KILL_TREE_SCRIPT, "sh", name, String(pid)]);
  const runAs = (user: string | undefined) =>
    sandboxCall(ctx, sandbox.id, `kill ${pid}`, abort, () =>
      sandbox.native.commands.run(line, {
        background: true,
        ...(user === undefined ? {} : { user }),
        timeoutMs: 60_000,
        ...(ctx.options.requestTimeoutMs === undefined
          ? {}
          : { requestTimeoutMs: ctx.options.requestTimeoutMs }),
      }),
    );
  let handle: CommandHandle;
  try {
    handle = await runAs("root");
  } catch (error) {
    if (!(SandboxError.isInstance(error) && /\[permission_denied\]/.test(error.message))) throw error;
    handle = await runAs(ctx.options.user);
  }
  const exit = await waitForExit(handle);
  if (exit.exitCode === 3) {
    throw new SandboxError("NotFound", `e2b kill: no process ${pid} in sandbox ${sandbox.id}`);
  }
  if (exit.exitCode !== 0) {
    throw new SandboxError("Provider", `e2b kill ${pid}: the kill helper exited ${String(exit.exitCode)}`, {
      retryable: false,
    });
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref?.());
}

/**
 * Runs a command to its end, streaming output. Stdin (bytes or a stream) is fed and then closed. An abort
 * of `request.signal` (the core's timeout, the user's signal, `handle.kill()`) kills the whole tree and
 * rejects with the abort's reason.
 */
export async function execStream(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  request: DriverExecRequest & Partial<DriverOutputCallbacks>,
): Promise<DriverExit> {
  const hasStdin = request.stdin !== undefined;
  const handle = await start(ctx, sandbox, request, request, hasStdin, "exec");
  const exit = waitForExit(handle);
  exit.catch(() => {});
  // `handle.kill(signal)`: exactly that signal to the command's tree; a command already gone is no error.
  request.onStarted?.({
    signal: (name) =>
      killProcessTree(ctx, sandbox, handle.pid, name).catch((error: unknown) => {
        if (!(SandboxError.isInstance(error) && error.code === "NotFound")) throw error;
      }),
  });
  // A command may run as long as it likes, but not on a sandbox that stopped answering.
  const lost = new AbortController();
  const stopWatching = watchLiveness(ctx, sandbox, (error) => lost.abort(error));
  const signal = AbortSignal.any([request.signal, lost.signal]);
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => {
      if (lost.signal.aborted) {
        // Nothing can be killed through a daemon that does not answer: report at once.
        void handle.disconnect();
        reject(lost.signal.reason);
        return;
      }
      killProcessTree(ctx, sandbox, handle.pid, "SIGKILL")
        .catch(() => undefined)
        // The daemon's own SIGKILL of the top process, in case the tree helper could not run.
        .then(() => handle.kill().catch(() => false))
        .then(() => Promise.race([exit.catch(() => undefined), delay(ABORT_SETTLE_MS)]))
        .finally(() => {
          void handle.disconnect();
          reject(abortErrorOf(signal, "e2b exec"));
        });
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  aborted.catch(() => {});
  const fed = hasStdin
    ? feedStdin(ctx, sandbox, handle.pid, request.stdin!, true).then(
        () => undefined,
        // A command may end (or close its stdin) before reading everything: then its exit decides.
        (error: unknown) =>
          exit.then(
            () => undefined,
            () => Promise.reject(error),
          ),
      )
    : Promise.resolve();
  try {
    const [result] = await Promise.race([Promise.all([exit, fed]), aborted]);
    // A command that ended because of the abort (its tree was just killed) reports the abort, not the kill.
    if (signal.aborted) await aborted;
    return result;
  } finally {
    stopWatching();
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}

/** Runs a command to its end and returns its buffered output. */
export async function exec(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  request: DriverExecRequest,
): Promise<DriverExit & { stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const exit = await execStream(ctx, sandbox, {
    ...request,
    onStdout: (chunk) => {
      stdout += typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk);
    },
    onStderr: (chunk) => {
      stderr += typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk);
    },
  });
  return { ...exit, stdout, stderr };
}

function driverProcess(ctx: CommandContext, sandbox: E2BDriverSandbox, handle: CommandHandle): DriverProcess {
  const pid = handle.pid;
  let stopWatching = () => {};
  // A background process may run for ever; its wait ends when the sandbox stops answering (see liveness).
  const lost = new Promise<never>((_, reject) => {
    stopWatching = watchLiveness(ctx, sandbox, (error) => {
      void handle.disconnect();
      reject(error);
    });
  });
  lost.catch(() => {});
  const exit = Promise.race([waitForExit(handle), lost]).finally(() => stopWatching());
  exit.catch(() => {});
  return {
    pid,
    wait: () => exit,
    kill: (signal = "SIGKILL") => killProcessTree(ctx, sandbox, pid, signal),
    writeStdin: (data) => sendStdin(ctx, sandbox, pid, data),
    closeStdin: () =>
      sandboxCall(ctx, sandbox.id, `closing stdin of process ${pid}`, undefined, () =>
        sandbox.native.commands.closeStdin(pid, { signal: unarySignal(ctx.options) }),
      ),
  };
}

/**
 * Starts a background process. Stdin given at spawn is delivered and then closed, as the core's E4 and
 * every other adapter do (a `cat` ends); without it, stdin stays open for `writeStdin`.
 */
export async function spawn(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  request: DriverExecRequest & DriverOutputCallbacks,
): Promise<DriverProcess> {
  const handle = await start(ctx, sandbox, request, request, true, "spawn");
  const proc = driverProcess(ctx, sandbox, handle);
  if (request.stdin !== undefined) await feedStdin(ctx, sandbox, handle.pid, request.stdin, true);
  return proc;
}

/** Re-attaches to a running process by pid; E2B delivers the output produced from now on. */
export async function connectProcess(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  pid: number,
  request: { signal: AbortSignal } & DriverOutputCallbacks,
): Promise<DriverProcess> {
  const handle = await sandboxCall(ctx, sandbox.id, `connect process ${pid}`, request.signal, () =>
    sandbox.native.commands.connect(pid, {
      timeoutMs: 0,
      onStdout: (chunk) => request.onStdout(chunk),
      onStderr: (chunk) => request.onStderr(chunk),
    }),
  );
  return driverProcess(ctx, sandbox, handle);
}

/** The daemon's process list: commands it started that are still running (it forgets ended ones). */
export async function listProcesses(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  signal: AbortSignal,
): Promise<ProcessInfo[]> {
  const processes = await sandboxCall(ctx, sandbox.id, "commands.list", signal, () =>
    sandbox.native.commands.list({ signal: unarySignal(ctx.options, signal) }),
  );
  return processes.map((p) => ({
    pid: p.pid,
    // The SDK runs every command as `/bin/bash -l -c <line>`: show the line the user gave.
    command:
      p.cmd === "/bin/bash" && p.args.length === 3 && p.args[0] === "-l" && p.args[1] === "-c"
        ? displayOfScript(p.args[2]!)
        : [p.cmd, ...p.args].join(" "),
    running: true,
  }));
}
