import { randomBytes } from "node:crypto";

/**
 * The states of a Fly Machine (https://fly.io/docs/machines/machine-states/) and what `/wait` can wait for.
 * Transitional states (`starting`, `stopping`, `suspending`, `replacing`, `destroying`) lead to the
 * settled ones; `failed` is where a machine that could not boot ends up, and a destroyed machine stays
 * visible as `destroyed` for a while before it is gone (404).
 */

/** Every state the emulator reports. */
export type FlyState =
  | "created"
  | "starting"
  | "started"
  | "stopping"
  | "stopped"
  | "suspending"
  | "suspended"
  | "replacing"
  | "destroying"
  | "destroyed"
  | "failed";

/** States `/wait?state=` accepts (`settled` is any state that is not a transition). */
export const WAIT_STATES: readonly string[] = [
  "started",
  "stopped",
  "suspended",
  "destroyed",
  "failed",
  "settled",
];

/** States that are on their way to another. */
export const TRANSITIONAL_STATES: ReadonlySet<FlyState> = new Set<FlyState>([
  "starting",
  "stopping",
  "suspending",
  "replacing",
  "destroying",
]);

/** True when `state` satisfies one of the states waited for. */
export function satisfies(state: FlyState, wanted: readonly string[]): boolean {
  return wanted.some((want) =>
    want === "settled" ? !TRANSITIONAL_STATES.has(state) && state !== "created" : want === state,
  );
}

/** States a machine is running (or about to) in: destroying it needs `force`. */
export const RUNNING_STATES: ReadonlySet<FlyState> = new Set<FlyState>([
  "starting",
  "started",
  "stopping",
  "suspending",
  "replacing",
]);

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** A 26-character ULID (time-ordered), the form of Fly's machine versions and event ids. */
export function newUlid(now: number): string {
  let time = "";
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  let random = "";
  for (const byte of randomBytes(16)) random += CROCKFORD[byte % 32];
  return time + random;
}
