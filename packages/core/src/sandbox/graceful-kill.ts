import { SandboxError } from "../errors/sandbox-error.js";
import type { KillOptions } from "./sandbox-types.js";
import { normalizeSignal } from "./signal-names.js";

/** How long `kill()` without a signal waits after SIGTERM before it sends SIGKILL. */
export const DEFAULT_KILL_GRACE_MS = 3000;

/** Longest grace period accepted (a kill must not wait without bound). */
const MAX_GRACE_MS = 10 * 60_000;

/** What one `kill()` does: the first signal, and whether (after how long) SIGKILL follows. */
export interface KillPlan {
  readonly signal: string;
  /** SIGKILL follows after this many ms if the process is still there; undefined: no escalation. */
  readonly graceMs: number | undefined;
}

/**
 * The plan of a `kill(signal?, options?)` call. Without a signal: SIGTERM, then SIGKILL after
 * `graceMs` (default {@link DEFAULT_KILL_GRACE_MS}). With a signal: only that signal, unless `graceMs`
 * is given too. SIGKILL never escalates.
 */
export function planKill(signal: string | undefined, options: KillOptions | undefined): KillPlan {
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new SandboxError("Validation", "kill options must be an object: { graceMs }", { retryable: false });
  }
  const grace = options?.graceMs;
  if (
    grace !== undefined &&
    (typeof grace !== "number" || !Number.isFinite(grace) || grace < 0 || grace > MAX_GRACE_MS)
  ) {
    throw new SandboxError(
      "Validation",
      `graceMs must be a number of milliseconds from 0 to ${MAX_GRACE_MS}, got ${String(grace)}`,
      { retryable: false },
    );
  }
  const name = normalizeSignal(signal, "SIGTERM");
  if (name === "SIGKILL") return { signal: name, graceMs: undefined };
  return { signal: name, graceMs: signal === undefined ? (grace ?? DEFAULT_KILL_GRACE_MS) : grace };
}

/**
 * Carries out a plan: sends the first signal; then, when the plan escalates and `ended(graceMs)` says the
 * process is still there after the grace period, sends SIGKILL. A process that ended in between is not
 * an error (its SIGKILL finds nothing: `NotFound` is ignored).
 */
export async function killGracefully(
  plan: KillPlan,
  send: (signal: string) => Promise<void>,
  ended: (withinMs: number) => Promise<boolean>,
): Promise<void> {
  await send(plan.signal);
  if (plan.graceMs === undefined) return;
  if (await ended(plan.graceMs)) return;
  try {
    await send("SIGKILL");
  } catch (error) {
    if (!(SandboxError.isInstance(error) && error.code === "NotFound")) throw error;
  }
}

/** Resolves true when `exited` settles within `ms`, false otherwise. */
export function settlesWithin(exited: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    exited.then(
      () => {
        clearTimeout(timer);
        resolve(true);
      },
      () => {
        clearTimeout(timer);
        resolve(true);
      },
    );
  });
}

/**
 * Resolves true once `isRunning()` answers false (polled every 100 ms) within `ms`, false when it still
 * runs then. Without a way to look (`isRunning` undefined) it waits the whole period and says "still there".
 */
export async function stopsWithin(
  isRunning: (() => Promise<boolean>) | undefined,
  ms: number,
): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (isRunning && !(await isRunning().catch(() => true))) return true;
    const left = deadline - Date.now();
    if (left <= 0) return false;
    await new Promise((resolve) => setTimeout(resolve, Math.min(100, left)));
  }
}
