import { abortErrorOf } from "@sbox/core/spec";
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
    if (signal.aborted) return reject(abortErrorOf(signal, what));
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortErrorOf(signal, what));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
