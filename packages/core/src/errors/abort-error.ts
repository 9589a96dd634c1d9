import { SandboxError } from "./sandbox-error.js";

/**
 * The error a call rejects with once `signal` aborted: the signal's reason when that already is a
 * `SandboxError` (the core's own `Timeout`), `Timeout` for the reason of an `AbortSignal.timeout()` (a
 * `TimeoutError`), `Aborted` otherwise. For providers that bound their own calls with timeout signals.
 */
export function abortErrorOf(signal: AbortSignal, what: string): SandboxError {
  const reason: unknown = signal.reason;
  if (SandboxError.isInstance(reason)) return reason;
  if (reason instanceof Error && reason.name === "TimeoutError") {
    return new SandboxError("Timeout", `${what} timed out`, { cause: reason, retryable: true });
  }
  return new SandboxError("Aborted", `${what} was aborted`, { cause: reason, retryable: false });
}
