import { SandboxError } from "../errors/sandbox-error.js";
import type { RetryOptions } from "./client-types.js";

const DEFAULTS = { retries: 2, baseDelayMs: 200, maxDelayMs: 5_000 };

/** Sleeps `ms`, rejecting with `Aborted` as soon as `signal` fires. */
export function abortableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal!));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The error to reject with when `signal` aborted: its reason when that is a SandboxError, else `Aborted`. */
export function abortError(signal: AbortSignal): SandboxError {
  const reason: unknown = signal.reason;
  if (SandboxError.isInstance(reason)) return reason;
  return new SandboxError("Aborted", "the operation was aborted", { cause: reason, retryable: false });
}

/** Backoff before retry number `attempt` (1-based): exponential with full jitter, capped. */
export function backoffDelay(attempt: number, options: RetryOptions | undefined): number {
  const base = options?.baseDelayMs ?? DEFAULTS.baseDelayMs;
  const max = options?.maxDelayMs ?? DEFAULTS.maxDelayMs;
  const ceiling = Math.min(max, base * 2 ** (attempt - 1));
  return Math.round(Math.random() * ceiling);
}

/**
 * Runs `operation`, retrying retryable `SandboxError`s with backoff. Non-retryable errors and aborts are
 * thrown at once.
 */
export async function withRetry<T>(
  operation: (attempt: number) => Promise<T>,
  options: RetryOptions | undefined,
  signal: AbortSignal | undefined,
): Promise<T> {
  const retries = options?.retries ?? DEFAULTS.retries;
  for (let attempt = 0; ; attempt++) {
    if (signal?.aborted) throw abortError(signal);
    try {
      return await operation(attempt);
    } catch (error) {
      if (!SandboxError.isInstance(error) || error.code === "Aborted" || attempt >= retries) throw error;
      const retry = options?.shouldRetry ? options.shouldRetry(error, attempt + 1) : error.retryable;
      if (!retry) throw error;
      await abortableSleep(backoffDelay(attempt + 1, options), signal);
    }
  }
}
