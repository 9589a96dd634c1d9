import { withTimeout } from "../emulation/e7-timeout.js";
import { validateEnv } from "../emulation/shell-quote.js";
import { SandboxError } from "../errors/sandbox-error.js";
import type { DriverCommand } from "../spec/provider-spec.js";
import { failedCommand, RunningCommand } from "./command-handle.js";
import { resolveCwd } from "./resolve-cwd.js";
import { failure, invalidInput, requireCapability, type SandboxContext } from "./sandbox-context.js";
import type { CommandHandle, RunOptions } from "./sandbox-types.js";
import { exitCodeForSignal, normalizeSignal } from "./signal-names.js";

/** After an abort, how long a driver may take to settle before the handle rejects without it. */
const ABORT_SETTLE_MS = 10_000;

/** Why a run's signal was aborted by `handle.kill()`: the command ends with this signal instead of failing. */
class KillRequest {
  constructor(readonly signal: string) {}
}

/** Validates a user command and turns it into a driver command. */
export function toDriverCommand(command: string | readonly string[]): DriverCommand {
  if (typeof command === "string") {
    if (command.trim() === "") throw invalidInput("command must not be empty");
    if (command.includes("\0")) throw invalidInput("command must not contain a NUL character");
    return { shell: command };
  }
  if (!Array.isArray(command) || command.length === 0)
    throw invalidInput("command must be a string or a non-empty argv array");
  for (const word of command) {
    if (typeof word !== "string") throw invalidInput("every argv word must be a string");
    if (word.includes("\0")) throw invalidInput("argv words must not contain a NUL character");
  }
  if (command[0] === "") throw invalidInput("argv[0] must not be empty");
  return { argv: command };
}

/** Validates the options shared by `run` and `spawn`. */
export function validateRunOptions(options: RunOptions): void {
  if (
    options.cwd !== undefined &&
    (typeof options.cwd !== "string" || options.cwd === "" || options.cwd.includes("\0"))
  ) {
    throw invalidInput("cwd must be a non-empty string without NUL");
  }
  validateEnv(options.env);
  if (
    options.timeoutMs !== undefined &&
    (typeof options.timeoutMs !== "number" || !Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0)
  ) {
    throw invalidInput("timeoutMs must be a positive number");
  }
  const stdin = options.stdin;
  if (
    stdin !== undefined &&
    typeof stdin !== "string" &&
    !(stdin instanceof Uint8Array) &&
    !(stdin instanceof ReadableStream)
  ) {
    throw invalidInput("stdin must be a string, a Uint8Array or a ReadableStream");
  }
}

/**
 * `commands.run`: validates, then hands the command to the exec pipeline under the command's deadline
 * (E7) and its `kill()`. Invalid input gives a handle that rejects (the call itself never throws).
 */
export function runCommand(
  context: SandboxContext,
  command: string | readonly string[],
  options: RunOptions,
): CommandHandle {
  let driverCommand: DriverCommand;
  try {
    validateRunOptions(options);
    driverCommand = toDriverCommand(command);
    if (options.stdin !== undefined) requireCapability(context, "stdin");
  } catch (error) {
    return failedCommand(failure(context, error, "commands.run"));
  }
  const kill = new AbortController();
  const stdin = typeof options.stdin === "string" ? new TextEncoder().encode(options.stdin) : options.stdin;
  return new RunningCommand(
    options,
    async (sink) => {
      const parent = options.signal ? AbortSignal.any([options.signal, kill.signal]) : kill.signal;
      const deadline = withTimeout(parent, options.timeoutMs, "command");
      try {
        const run = context.runtime.exec.run(context.handle, {
          command: driverCommand,
          cwd: await resolveCwd(context, options.cwd),
          env: options.env,
          stdin,
          user: options.user,
          signal: deadline.signal,
          onStdout: sink.stdout,
          onStderr: sink.stderr,
          ready: sink.ready,
        });
        return await settleWithin(deadline.signal, run);
      } catch (error) {
        if (kill.signal.aborted && kill.signal.reason instanceof KillRequest) {
          const signal = kill.signal.reason.signal;
          return { exitCode: exitCodeForSignal(signal), signal };
        }
        throw failure(context, error, "commands.run");
      } finally {
        deadline.dispose();
      }
    },
    async (signal) => {
      const name = normalizeSignal(signal, "SIGKILL");
      if (!kill.signal.aborted) kill.abort(new KillRequest(name));
    },
  );
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
