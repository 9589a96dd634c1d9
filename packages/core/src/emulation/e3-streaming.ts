import { SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import { normalizeSignal } from "../sandbox/signal-names.js";
import type { ProviderDriver } from "../spec/provider-spec.js";
import { abortReasonOf } from "./e7-timeout.js";
import { type EmulationContext, stateDirOf } from "./emulation-context.js";
import { newExitTokens } from "./exit-proof.js";
import {
  detachedScript,
  housekeepingSignal,
  killAndRemove,
  killGroupScript,
  newRunId,
  RUN_FILES,
  startDetached,
} from "./output-detached.js";
import { followRun } from "./output-poller.js";
import { uploadToFile } from "./shell-exec-upload.js";

const WHAT = "the command";

/**
 * E3: streaming over a buffered exec primitive. The command runs detached in its own session under
 * `<stateDir>/<random id>/`, writing stdout and stderr to files; the sandbox's poller reads their new bytes
 * (see `followRun`), so output reaches `onStdout`/`onStderr` while the command runs.
 *
 * - The start exec waits a few milliseconds and polls once: a short command costs a single exec, and the
 *   first chunk of a longer one arrives one round trip after the start.
 * - The exit code is proven: the supervisor names it with tokens only this client knows (handed over on the
 *   exec's stdin), so another process of the sandbox that rewrites the run's files cannot change it; it can
 *   only destroy the record, which fails the call (see `exit-proof.ts`).
 * - `cwd`/`env` of the request are applied with E1 inside the detached command.
 * - stdin bytes are written to a file first (with the exec's stdin when it takes any, else in base64
 *   pieces under the 64 KiB command-line bound) and redirected; a `ReadableStream` is read to its end into
 *   that file BEFORE the command starts, so it suits finite input, not an interactive conversation.
 * - A callback that returns a promise pauses the fetching of output until it settles (back-pressure).
 * - When `request.signal` aborts, the command's whole process group gets SIGTERM, then SIGKILL after a
 *   short grace, and the call rejects with the signal's reason when that is a `SandboxError` (the
 *   `Timeout` of E7), else with `Aborted`. Killing uses its own signal, never the aborted one.
 * - `request.onStarted` gets a control that sends a signal to the command's process group (`handle.kill()`).
 *   A POSIX shell starts the detached command with SIGINT and SIGQUIT ignored (an asynchronous list without
 *   job control), and a shell cannot trap a signal ignored on entry: those two do not reach it here.
 * - The run directory is removed when the command ended and its output was delivered, or after a kill.
 */
export function emulatedExecStream(ctx: EmulationContext): NonNullable<ProviderDriver["doExecStream"]> {
  return async (sandbox, request) => {
    if (request.signal.aborted) throw abortReasonOf(request.signal.reason, WHAT);
    const script = detachedScript(ctx, request, "streaming exec");
    const stateDir = stateDirOf(ctx, sandbox);
    const dir = `${stateDir}/${newRunId()}`;
    const tokens = newExitTokens();
    let pid: number | undefined;
    try {
      if (request.stdin !== undefined) {
        await uploadToFile(ctx, sandbox, `${dir}/${RUN_FILES.stdin}`, request.stdin, {
          signal: request.signal,
          what: "the stdin of the command",
        });
      }
      const run = await startDetached(ctx, sandbox, {
        dir,
        stateDir,
        script,
        stdin: request.stdin === undefined ? "none" : "file",
        tokens,
        removeWhenDone: true,
      });
      pid = run.pid;
      const group = run.pid;
      // `handle.kill(signal)`: the command's process group gets exactly the signal asked for; the run then
      // ends as the command decides (a handler's output and exit code are followed like any other).
      request.onStarted?.({
        signal: async (name) => {
          const result = await ctx.exec(sandbox, killGroupScript(group, normalizeSignal(name, "SIGTERM")), {
            signal: housekeepingSignal(),
          });
          if (result.exitCode !== 0) {
            throw new SandboxError("Provider", `signalling the command failed (exit ${result.exitCode})`, {
              provider: ctx.provider,
            });
          }
        },
      });
      return await followRun(ctx, sandbox, {
        dir,
        signal: request.signal,
        removeWhenDone: true,
        what: WHAT,
        tokens,
        foreground: true,
        initial: run.initial,
        onStdout: (chunk) => request.onStdout(chunk),
        onStderr: (chunk) => request.onStderr(chunk),
        ready: request.ready,
      });
    } catch (error) {
      const failure = request.signal.aborted
        ? abortReasonOf(request.signal.reason, WHAT)
        : toSandboxError(error, { provider: ctx.provider, operation: "exec (streaming)" });
      // The original failure is what the caller needs to see; a failed cleanup cannot change it.
      const cleanup = killAndRemove(ctx, sandbox, dir, pid).catch(() => undefined);
      // A remote that stopped answering would hold the cleanup for another deadline: it goes on in the
      // background. A timeout or abort of the command itself waits for the kill, as E7 promises.
      if (request.signal.aborted || failure.code !== "Timeout") await cleanup;
      throw failure;
    }
  };
}
