import { SandboxError } from "../errors/sandbox-error.js";

/** A signal that fires on timeout or when its parent aborts; `dispose()` releases the timer and listener. */
export interface TimeoutSignal {
  readonly signal: AbortSignal;
  /** Stops the timer and detaches from the parent. Safe to call more than once. */
  dispose(): void;
}

/**
 * E7: a per-call deadline. The returned signal aborts with a `SandboxError("Timeout")` after `timeoutMs`,
 * or, when `parent` aborts first, with the parent's reason if that is already a `SandboxError` (so an outer
 * `Timeout` stays a `Timeout`) and with `SandboxError("Aborted")` otherwise. The emulated streaming and
 * background drivers kill the command's whole process group when their signal aborts, which is what turns
 * this signal into "kill the tree, reject with Timeout".
 *
 * @param what names the operation in the error message, e.g. `"command \"make\""`.
 */
export function withTimeout(
  parent: AbortSignal | undefined,
  timeoutMs: number | undefined,
  what: string,
): TimeoutSignal {
  if (
    timeoutMs !== undefined &&
    (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs <= 0)
  ) {
    throw new SandboxError(
      "Validation",
      `timeoutMs must be a finite number greater than 0, got ${String(timeoutMs)}`,
      {
        retryable: false,
      },
    );
  }
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const onParentAbort = (): void => {
    dispose();
    controller.abort(abortReasonOf(parent?.reason, what));
  };
  const dispose = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    parent?.removeEventListener("abort", onParentAbort);
  };
  if (parent?.aborted) {
    onParentAbort();
    return { signal: controller.signal, dispose };
  }
  parent?.addEventListener("abort", onParentAbort, { once: true });
  if (timeoutMs !== undefined) {
    // setTimeout clamps delays above 2^31-1 ms to 1 ms; a longer deadline is as good as none.
    if (timeoutMs <= 2_147_483_647) {
      timer = setTimeout(() => {
        dispose();
        controller.abort(
          new SandboxError("Timeout", `${what} timed out after ${timeoutMs} ms`, { retryable: true }),
        );
      }, timeoutMs);
    }
  }
  return { signal: controller.signal, dispose };
}

/** The `SandboxError` an abort reason stands for: kept when it already is one, else `Aborted`. */
export function abortReasonOf(reason: unknown, what: string): SandboxError {
  if (SandboxError.isInstance(reason)) return reason;
  return new SandboxError("Aborted", `${what} was aborted`, { cause: reason, retryable: false });
}
