import { applyEnvCwd, commandScript } from "../emulation/e1-env-cwd.js";
import { createExitMarker } from "../emulation/e2-exit-marker.js";
import { emulatedExecStream } from "../emulation/e3-streaming.js";
import { withTimeout } from "../emulation/e7-timeout.js";
import { toBytes } from "../emulation/shell-exec.js";
import { validateEnv } from "../emulation/shell-quote.js";
import { NotSupportedError, SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import type { DriverCommand, DriverExecRequest, DriverExit, DriverProcess } from "../spec/provider-spec.js";
import { AsyncQueue } from "./async-queue.js";
import { failedCommand, type OutputSink, RunningCommand } from "./command-handle.js";
import { killGracefully, planKill, settlesWithin, stopsWithin } from "./graceful-kill.js";
import { driverMethod, guard, requireCapability, type SandboxContext } from "./sandbox-context.js";
import type { CommandHandle, CommandsApi, RunOptions, SandboxProcess } from "./sandbox-types.js";
import { exitCodeForSignal, normalizeSignal } from "./signal-names.js";
import { Utf8StreamDecoder } from "./utf8-stream-decoder.js";

/** After an abort, how long a driver may take to settle before the handle rejects without it. */
const ABORT_SETTLE_MS = 10_000;

/** Why a run's signal was aborted by `handle.kill()`: the command ends with this signal instead of failing. */
class KillRequest {
  constructor(readonly signal: string) {}
}

function invalid(message: string): SandboxError {
  return new SandboxError("Validation", message, { retryable: false });
}

/** Validates a user command and turns it into a driver command. */
export function toDriverCommand(command: string | readonly string[]): DriverCommand {
  if (typeof command === "string") {
    if (command.trim() === "") throw invalid("command must not be empty");
    if (command.includes("\0")) throw invalid("command must not contain a NUL character");
    return { shell: command };
  }
  if (!Array.isArray(command) || command.length === 0)
    throw invalid("command must be a string or a non-empty argv array");
  for (const word of command) {
    if (typeof word !== "string") throw invalid("every argv word must be a string");
    if (word.includes("\0")) throw invalid("argv words must not contain a NUL character");
  }
  if (command[0] === "") throw invalid("argv[0] must not be empty");
  return { argv: command };
}

function validateRunOptions(options: RunOptions): void {
  if (
    options.cwd !== undefined &&
    (typeof options.cwd !== "string" || options.cwd === "" || options.cwd.includes("\0"))
  ) {
    throw invalid("cwd must be a non-empty string without NUL");
  }
  validateEnv(options.env);
  if (
    options.timeoutMs !== undefined &&
    (typeof options.timeoutMs !== "number" || !Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0)
  ) {
    throw invalid("timeoutMs must be a positive number");
  }
  const stdin = options.stdin;
  if (
    stdin !== undefined &&
    typeof stdin !== "string" &&
    !(stdin instanceof Uint8Array) &&
    !(stdin instanceof ReadableStream)
  ) {
    throw invalid("stdin must be a string, a Uint8Array or a ReadableStream");
  }
}

/** The commands namespace of one sandbox. */
export function createCommandsApi(context: SandboxContext): CommandsApi {
  const { runtime } = context;
  const { map, flags } = runtime.capabilities;
  let fallbackStream: ReturnType<typeof emulatedExecStream> | undefined;
  const emulatedStream = () => {
    fallbackStream ??= emulatedExecStream(runtime.emulation);
    return fallbackStream;
  };

  /**
   * E1 in the core when the exec path does not honour cwd/env itself. The emulated paths (E3, E4) apply
   * E1 inside their detached command, so they get cwd/env as given and keep the user's command readable
   * in `commands.list()`.
   */
  const prepare = (command: DriverCommand, options: RunOptions, pathHonoursEnvCwd: boolean) => {
    const needsPrefix =
      !pathHonoursEnvCwd &&
      (options.cwd !== undefined || (options.env && Object.keys(options.env).length > 0));
    return {
      command: needsPrefix
        ? { shell: applyEnvCwd(command, { cwd: options.cwd, env: options.env }) }
        : command,
      cwd: pathHonoursEnvCwd ? options.cwd : undefined,
      env: pathHonoursEnvCwd ? options.env : undefined,
    };
  };

  const run = (command: string | readonly string[], options: RunOptions = {}): CommandHandle => {
    let driverCommand: DriverCommand;
    try {
      validateRunOptions(options);
      driverCommand = toDriverCommand(command);
      if (options.stdin !== undefined) requireCapability(context, "stdin");
    } catch (error) {
      const wrapped = toSandboxError(error, { provider: runtime.name, operation: "commands.run" });
      context.reportError(wrapped, "commands.run");
      return failedCommand(wrapped);
    }
    const kill = new AbortController();
    const stdin = typeof options.stdin === "string" ? new TextEncoder().encode(options.stdin) : options.stdin;
    const execute = async (sink: OutputSink): Promise<{ exitCode: number; signal?: string | undefined }> => {
      const parent = options.signal ? AbortSignal.any([options.signal, kill.signal]) : kill.signal;
      const deadline = withTimeout(parent, options.timeoutMs, "command");
      try {
        return await settleWithin(deadline.signal, execOnce(sink, deadline.signal));
      } catch (error) {
        if (kill.signal.aborted && kill.signal.reason instanceof KillRequest) {
          const signal = kill.signal.reason.signal;
          return { exitCode: exitCodeForSignal(signal), signal };
        }
        throw error;
      } finally {
        deadline.dispose();
      }
    };
    const execOnce = async (
      sink: OutputSink,
      signal: AbortSignal,
    ): Promise<DriverExit & { exitCode: number }> => {
      // Live stdin needs the provider's own stdin; otherwise the emulated stream feeds it from a file.
      const stdinNeedsEmulation = stdin !== undefined && map.stdin !== "native";
      const streaming = stdinNeedsEmulation ? "emulated" : map.streaming;
      if (streaming === "emulated") {
        const stream = stdinNeedsEmulation ? emulatedStream() : context.runtime.driver.doExecStream!;
        const prepared = prepare(driverCommand, options, true);
        const exit = await stream(context.handle, {
          ...prepared,
          stdin,
          user: options.user,
          signal,
          onStdout: sink.stdout,
          onStderr: sink.stderr,
        });
        return requireExitCode(exit);
      }
      const prepared = prepare(driverCommand, options, flags.perCommandEnvCwd);
      const marker = flags.exitCodeNative ? undefined : createExitMarker();
      const request: DriverExecRequest = {
        command: marker ? { shell: marker.wrap(commandScript(prepared.command)) } : prepared.command,
        cwd: prepared.cwd,
        env: prepared.env,
        stdin,
        user: options.user,
        signal,
      };
      const parser = marker?.createParser();
      const stdoutOf = (chunk: Uint8Array | string) => (parser ? parser.push(toBytes(chunk)) : chunk);
      let exit: DriverExit;
      if (streaming === "native") {
        exit = await runtime.driver.doExecStream!(context.handle, {
          ...request,
          onStdout: (chunk) => sink.stdout(stdoutOf(chunk)),
          onStderr: sink.stderr,
        });
      } else {
        const result = await runtime.driver.doExec(context.handle, request);
        sink.stdout(stdoutOf(result.stdout));
        sink.stderr(result.stderr);
        exit = result;
      }
      if (parser) {
        const { rest, exitCode } = parser.finish();
        sink.stdout(rest);
        exit = { ...exit, exitCode };
      }
      return requireExitCode(exit);
    };
    const requireExitCode = (exit: DriverExit): DriverExit & { exitCode: number } => {
      if (typeof exit.exitCode === "number") return exit as DriverExit & { exitCode: number };
      if (exit.signal) return { ...exit, exitCode: exitCodeForSignal(exit.signal) };
      throw new SandboxError("Provider", "the provider did not report the command's exit code", {
        provider: runtime.name,
      });
    };
    const handle = new RunningCommand(
      options,
      async (sink) => {
        try {
          return await execute(sink);
        } catch (error) {
          const wrapped = toSandboxError(error, { provider: runtime.name, operation: "commands.run" });
          context.reportError(wrapped, "commands.run");
          throw wrapped;
        }
      },
      async (signal) => {
        const name = normalizeSignal(signal, "SIGKILL");
        if (!kill.signal.aborted) kill.abort(new KillRequest(name));
      },
    );
    return handle;
  };

  const outputCallbacks = () => {
    const stdout = new AsyncQueue<string>();
    const stderr = new AsyncQueue<string>();
    const out = new Utf8StreamDecoder();
    const err = new Utf8StreamDecoder();
    return {
      stdout,
      stderr,
      callbacks: {
        onStdout: (chunk: Uint8Array | string) => {
          const text = out.write(chunk);
          if (text) stdout.push(text);
        },
        onStderr: (chunk: Uint8Array | string) => {
          const text = err.write(chunk);
          if (text) stderr.push(text);
        },
      },
      flush: () => {
        const restOut = out.end();
        const restErr = err.end();
        if (restOut) stdout.push(restOut);
        if (restErr) stderr.push(restErr);
      },
    };
  };

  return {
    run,
    spawn: (command, options = {}) =>
      guard(context, "commands.spawn", async () => {
        requireCapability(context, "background");
        validateRunOptions(options);
        const driverCommand = toDriverCommand(command);
        if (options.stdin instanceof ReadableStream) {
          throw invalid("spawn takes stdin as a string or bytes; write more with process.writeStdin()");
        }
        const stdin =
          typeof options.stdin === "string" ? new TextEncoder().encode(options.stdin) : options.stdin;
        const io = outputCallbacks();
        const prepared = prepare(
          driverCommand,
          options,
          map.background === "emulated" || flags.perCommandEnvCwd,
        );
        const driverProcess = await driverMethod(
          context,
          runtime.driver.doSpawn,
          "background",
        )(context.handle, {
          ...prepared,
          stdin,
          user: options.user,
          signal: options.signal ?? new AbortController().signal,
          ...io.callbacks,
        });
        return wrapProcess(context, driverProcess, io.stdout, io.stderr, io.flush);
      }),
    list: () =>
      guard(context, "commands.list", async () => {
        requireCapability(context, "background");
        return driverMethod(
          context,
          runtime.driver.doListProcesses,
          "background",
        )(context.handle, {
          signal: new AbortController().signal,
        });
      }),
    connect: (pid) =>
      guard(context, "commands.connect", async () => {
        requireCapability(context, "background");
        if (!Number.isInteger(pid) || pid <= 0) throw invalid("pid must be a positive integer");
        const io = outputCallbacks();
        const driverProcess = await driverMethod(context, runtime.driver.doConnectProcess, "background")(
          context.handle,
          pid,
          { signal: new AbortController().signal, ...io.callbacks },
        );
        return wrapProcess(context, driverProcess, io.stdout, io.stderr, io.flush);
      }),
    kill: (pid, signal, options) =>
      guard(context, "commands.kill", async () => {
        requireCapability(context, "killProcess");
        if (!Number.isInteger(pid) || pid <= 0) throw invalid("pid must be a positive integer");
        const plan = planKill(signal, options);
        const send = driverMethod(context, runtime.driver.doKillProcess, "killProcess");
        const listProcesses = runtime.driver.doListProcesses;
        // Whether the process still runs, where the provider can list processes (else the grace period is waited out).
        const isRunning =
          map.background === "unsupported" || !listProcesses
            ? undefined
            : async () =>
                (await listProcesses(context.handle, { signal: new AbortController().signal })).some(
                  (process) => process.pid === pid && process.running,
                );
        await killGracefully(
          plan,
          (name) => send(context.handle, pid, name, { signal: new AbortController().signal }),
          (ms) => stopsWithin(isRunning, ms),
        );
      }),
  };
}

/** Resolves or rejects with `work`, but rejects at most ABORT_SETTLE_MS after `signal` aborts, never hangs. */
function settleWithin<T>(signal: AbortSignal, work: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = () => {
      timer = setTimeout(() => {
        const reason: unknown = signal.reason;
        reject(
          SandboxError.isInstance(reason)
            ? reason
            : new SandboxError("Aborted", "the command was aborted and the provider did not stop in time"),
        );
      }, ABORT_SETTLE_MS);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        if (timer) clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        if (timer) clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        // A driver that rejects because of the abort reports the abort's own reason (Timeout or Aborted).
        const reason: unknown = signal.reason;
        if (signal.aborted && SandboxError.isInstance(reason)) reject(reason);
        else reject(error);
      },
    );
  });
}

function wrapProcess(
  context: SandboxContext,
  driverProcess: DriverProcess,
  stdout: AsyncQueue<string>,
  stderr: AsyncQueue<string>,
  flush: () => void = () => {},
): SandboxProcess {
  const exited = driverProcess.wait().then(
    (exit) => {
      flush();
      stdout.end();
      stderr.end();
      const exitCode =
        typeof exit.exitCode === "number" ? exit.exitCode : exitCodeForSignal(exit.signal ?? "SIGKILL");
      return exit.signal === undefined ? { exitCode } : { exitCode, signal: exit.signal };
    },
    (error: unknown) => {
      const wrapped = toSandboxError(error, { provider: context.runtime.name, operation: "process.wait" });
      stdout.fail(wrapped);
      stderr.fail(wrapped);
      throw wrapped;
    },
  );
  exited.catch(() => {});
  return {
    pid: driverProcess.pid,
    stdout,
    stderr,
    wait: () => exited,
    kill: (signal, options) =>
      guard(context, "process.kill", async () =>
        killGracefully(
          planKill(signal, options),
          (name) => driverProcess.kill(name),
          (ms) => settlesWithin(exited, ms),
        ),
      ),
    writeStdin: (data) =>
      guard(context, "process.writeStdin", async () => {
        if (!driverProcess.writeStdin) throw new NotSupportedError("stdin", context.runtime.name);
        await driverProcess.writeStdin(typeof data === "string" ? new TextEncoder().encode(data) : data);
      }),
    closeStdin: () =>
      guard(context, "process.closeStdin", async () => {
        if (!driverProcess.closeStdin) throw new NotSupportedError("stdin", context.runtime.name);
        await driverProcess.closeStdin();
      }),
  };
}
