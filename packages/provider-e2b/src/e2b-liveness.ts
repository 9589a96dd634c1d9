import { SandboxError } from "@sbox/core/spec";
import { toE2BError } from "./e2b-errors.js";
import type { E2BDriverSandbox } from "./e2b-lifecycle.js";
import { type CommandContext, unreachableSandboxError } from "./e2b-sandbox-call.js";
import { boundedCall, deadlineSignal } from "./e2b-sdk.js";

/**
 * Bounds the wait for a command that legitimately runs long: every half request deadline (at least 1 s)
 * the sandbox's daemon is asked for its health, with the request deadline. A daemon that does not answer
 * in time means the command's stream can no longer be trusted to end (`Timeout`); one that answers "not
 * running" means the sandbox is gone or paused (`NotFound` / `InvalidState`, from the control plane).
 * `onLost` is called once with that error; the returned function stops the checks.
 */
export function watchLiveness(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  onLost: (error: SandboxError) => void,
): () => void {
  const deadline = ctx.options.requestTimeoutMs ?? 60_000;
  const interval = Math.max(1_000, deadline / 2);
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const check = async () => {
    let lost: SandboxError | undefined;
    try {
      const running = await boundedCall(
        ctx.options,
        "health check",
        sandbox.native.isRunning({ signal: deadlineSignal(deadline) }),
      );
      if (!running) {
        lost =
          (await unreachableSandboxError(ctx, sandbox.id, "exec", undefined)) ??
          new SandboxError("InvalidState", `e2b exec: sandbox ${sandbox.id} is not running any more`);
      }
    } catch (error) {
      if (toE2BError(error, { operation: "exec", plane: "sandbox" }).code === "Timeout") {
        lost = new SandboxError(
          "Timeout",
          `e2b exec: sandbox ${sandbox.id} stopped answering while the command ran (no health answer within ${deadline} ms)`,
          { cause: error, retryable: false },
        );
      }
      // Any other failure of a health check says nothing certain: the next check decides.
    }
    if (stopped) return;
    if (lost) {
      stopped = true;
      onLost(lost);
      return;
    }
    timer = setTimeout(check, interval);
    timer.unref?.();
  };
  timer = setTimeout(check, interval);
  timer.unref?.();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
