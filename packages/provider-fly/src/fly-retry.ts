import { SandboxError } from "@sbox/core/spec";
import { FLY_PROVIDER_NAME } from "./fly-names.js";
import type { ResolvedFlyRetry } from "./fly-options.js";

/** The longest `Retry-After` honoured, whatever `maxDelayMs` says: beyond it, failing is more useful. */
const MAX_RETRY_AFTER_MS = 60_000;

/**
 * Milliseconds to wait before retry number `attempt` (1-based): the server's `Retry-After` when it sent
 * one (seconds or an HTTP date), else exponential backoff with full jitter, capped at `maxDelayMs`.
 */
export function retryDelayMs(
  attempt: number,
  retry: ResolvedFlyRetry,
  retryAfter: string | null,
  random: () => number = Math.random,
): number {
  if (retryAfter !== null && retryAfter.trim() !== "") {
    const seconds = Number(retryAfter);
    const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(retryAfter) - Date.now();
    if (Number.isFinite(ms) && ms >= 0) return Math.min(ms, MAX_RETRY_AFTER_MS);
  }
  const ceiling = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** Waits `ms`; rejects with the signal's reason (or `Aborted`) when it fires first. */
export function sleepUnlessAborted(ms: number, signal: AbortSignal, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(abortError(signal, what));
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortError(signal, what));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The error of an aborted call: the signal's reason when it is a `SandboxError` (a `Timeout`), else `Aborted`. */
export function abortError(signal: AbortSignal, what: string): SandboxError {
  const reason: unknown = signal.reason;
  if (SandboxError.isInstance(reason)) return reason;
  if (reason instanceof Error && reason.name === "TimeoutError") {
    return new SandboxError("Timeout", `${what} timed out`, { provider: FLY_PROVIDER_NAME, cause: reason });
  }
  return new SandboxError("Aborted", `${what} was aborted`, {
    provider: FLY_PROVIDER_NAME,
    retryable: false,
    cause: reason,
  });
}
