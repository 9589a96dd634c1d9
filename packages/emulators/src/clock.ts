/**
 * The time an emulator lives by: timestamps it reports and timers it arms (sandbox timeouts, lease
 * expiries, state transitions). Tests pass their own to make time-bound behaviour deterministic.
 */

/** A timer armed on an {@link EmulatorClock}. */
export interface EmulatorTimer {
  cancel(): void;
}

/** A source of time and timers. */
export interface EmulatorClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `callback` once after `ms`; the timer never keeps the process alive on its own. */
  setTimer(callback: () => void, ms: number): EmulatorTimer;
}

/** The largest delay `setTimeout` takes; longer timers are re-armed in steps. */
const MAX_TIMER_MS = 2_147_483_647;

/** Wall-clock time and Node timers. */
export const systemClock: EmulatorClock = {
  now: () => Date.now(),
  setTimer(callback, ms) {
    let handle: NodeJS.Timeout | undefined;
    let cancelled = false;
    const due = Date.now() + Math.max(0, ms);
    const arm = () => {
      const left = due - Date.now();
      handle = setTimeout(
        () => {
          if (cancelled) return;
          if (due - Date.now() > 0) arm();
          else callback();
        },
        Math.min(Math.max(0, left), MAX_TIMER_MS),
      );
      handle.unref();
    };
    arm();
    return {
      cancel() {
        cancelled = true;
        if (handle) clearTimeout(handle);
      },
    };
  },
};
