import { withTimeout } from "../emulation/e7-timeout.js";
import { validateEnv } from "../emulation/shell-quote.js";
import { SandboxError } from "../errors/sandbox-error.js";
import type { DriverCommand, DriverExecControl } from "../spec/provider-spec.js";
import { failedCommand, RunningCommand } from "./command-handle.js";
import { type KillPlan, killGracefully, planKill, settlesWithin } from "./graceful-kill.js";
import { resolveCwd } from "./resolve-cwd.js";
import { failure, invalidInput, requireCapability, type SandboxContext } from "./sandbox-context.js";
import type { CommandHandle, RunOptions } from "./sandbox-types.js";
import { exitCodeForSignal } from "./signal-names.js";

/** After an abort, how long a driver may take to settle before the handle rejects without it. */
const ABORT_SETTLE_MS = 10_000;
/** How long `kill()` waits for a command that has not started yet before it aborts the exec instead. */
const START_WAIT_MS = 30_000;
/** After SIGKILL, how long the provider may take to report the command's end before its exec is aborted. */
const KILL_SETTLE_MS = 10_000;

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
 *
 * `kill(signal?, { graceMs })` follows the plan of `planKill` (SIGTERM, then SIGKILL after the grace; or
 * exactly the signal named). Whether a signal can reach the running command is the exec pipeline's
 * decision (`signalling`): through the control the provider's exec or E3 hands over (`onStarted`), after
 * which the command ends as it chooses and its own exit is reported; where nothing can signal it, by
 * aborting the exec, reported as ended by the signal asked for. Bounded: a command that has not started
 * within START_WAIT_MS, or is not reported gone KILL_SETTLE_MS after SIGKILL, is aborted.
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
  const signalling = context.runtime.exec.signalling({ stdin });
  // The means to signal the running command, once the exec hands it over; whether the run has ended.
  let started: DriverExecControl | undefined;
  let ended = false;
  const control = deferred<void>();
  const settled = deferred<void>();
  const done = settled.promise;
  /** Signals sent through the control, so an exit status of 128+n is named after the signal n sent. */
  const sent: string[] = [];
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
          onStarted: (handed) => {
            started ??= handed;
            control.resolve();
          },
        });
        const exit = await settleWithin(deadline.signal, run);
        return exit.signal === undefined ? { ...exit, signal: sentSignalOf(exit.exitCode, sent) } : exit;
      } catch (error) {
        if (kill.signal.aborted && kill.signal.reason instanceof KillRequest) {
          const signal = kill.signal.reason.signal;
          return { exitCode: exitCodeForSignal(signal), signal };
        }
        throw failure(context, error, "commands.run");
      } finally {
        ended = true;
        settled.resolve();
        deadline.dispose();
      }
    },
    async (signal, killOptions) => {
      let plan: KillPlan;
      try {
        plan = planKill(signal, killOptions);
      } catch (error) {
        throw failure(context, error, "handle.kill");
      }
      const abort = (name: string): void => {
        if (!kill.signal.aborted) kill.abort(new KillRequest(name));
      };
      if (signalling === "abort") return abort(plan.signal);
      // Before the command runs there is nothing to signal yet: wait for it (or its end), bounded.
      if (
        !started &&
        !ended &&
        !(await settlesWithin(Promise.race([control.promise, done]), START_WAIT_MS))
      ) {
        return abort(plan.signal);
      }
      const running = started;
      if (ended || running === undefined) return;
      const send = async (name: string): Promise<void> => {
        sent.push(name);
        try {
          await running.signal(name);
        } catch (error) {
          // A provider that could not deliver the signal still ends the command: by aborting its exec.
          abort(name);
          throw failure(context, error, "handle.kill");
        }
      };
      await killGracefully(plan, send, (ms) => settlesWithin(done, ms));
      // After SIGKILL the command must be gone soon; if the provider does not report its end, abort.
      if (plan.signal === "SIGKILL" || plan.graceMs !== undefined) {
        void settlesWithin(done, KILL_SETTLE_MS).then((gone) => {
          if (!gone) abort("SIGKILL");
        });
      }
    },
  );
}

/** The signal among those sent that explains an exit status of 128+n, the last one first. */
function sentSignalOf(exitCode: number, sent: readonly string[]): string | undefined {
  for (let i = sent.length - 1; i >= 0; i--) {
    const name = sent[i] as string;
    if (exitCodeForSignal(name) === exitCode) return name;
  }
  return undefined;
}

/** A promise and the function that resolves it. */
function deferred<T>(): { readonly promise: Promise<T>; resolve(value: T): void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
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
