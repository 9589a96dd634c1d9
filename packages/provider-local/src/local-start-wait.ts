import { cpus, loadavg } from "node:os";
import { localError } from "./local-errors.js";

/**
 * How long starting a sandbox's processes may take (its namespace holder, the lock another program holds
 * while it starts one) before the wait gives up, when the host is idle. A fixed bound is what a loaded CI
 * machine misses (a bubblewrap start that takes 30 ms idle takes seconds at a load of 40 on 2 cores), so the
 * default grows with the host's load (see {@link startBoundMs}); `local({ startTimeoutMs })` fixes it.
 */
export const BASE_START_TIMEOUT_MS = 30_000;
/** The load-scaled default never exceeds this: a start that never happens still ends in an error. */
export const MAX_START_TIMEOUT_MS = 300_000;

/**
 * The bound of one start-up wait: `configured` when given, else {@link BASE_START_TIMEOUT_MS} times the host's
 * run-queue length per CPU (at least 1), at most {@link MAX_START_TIMEOUT_MS}.
 */
export function startBoundMs(configured?: number | undefined): number {
  if (configured !== undefined) return configured;
  const perCpu = (loadavg()[0] ?? 0) / Math.max(1, cpus().length);
  return Math.min(MAX_START_TIMEOUT_MS, Math.round(BASE_START_TIMEOUT_MS * Math.max(1, perCpu)));
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Polls `probe` until it returns a value, with a delay growing from 2 ms to 50 ms (a loaded host is not
 * loaded more by the wait itself); past `boundMs` it rejects with a `Timeout` naming `what`, how long it
 * waited, the host's load and the option that raises the bound.
 */
export async function waitFor<T>(
  what: string,
  boundMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T> {
  const started = Date.now();
  for (let delay = 2; ; delay = Math.min(50, delay * 2)) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() - started > boundMs) throw startTimeout(what, Date.now() - started);
    await sleep(delay);
  }
}

/** The `Timeout` error of a start-up wait that gave up after `waitedMs`. */
export function startTimeout(what: string, waitedMs: number): Error {
  const load = (loadavg()[0] ?? 0).toFixed(1);
  return localError(
    "Timeout",
    `timed out after ${(waitedMs / 1000).toFixed(1)} s waiting for ${what} (host load ${load} on ${cpus().length} CPUs); local({ startTimeoutMs }) raises the bound`,
  );
}
