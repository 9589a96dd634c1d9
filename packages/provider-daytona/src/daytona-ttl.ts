import type { ResolvedDaytonaOptions } from "./daytona-options.js";

/** Daytona's lifetime settings of a create request, in minutes (only the ones to send are present). */
export interface DaytonaIntervals {
  autoStopInterval?: number;
  autoArchiveInterval?: number;
  autoDeleteInterval?: number;
  ttlMinutes?: number;
}

function defined(intervals: Record<string, number | undefined>): DaytonaIntervals {
  return Object.fromEntries(Object.entries(intervals).filter(([, value]) => value !== undefined));
}

/**
 * The intervals a create sends. A ttl is never dropped: Daytona counts in whole minutes, so a ttl of T ms
 * becomes M = ceil(T / 60 000) minutes (at least 1) of
 * - `ttlMinutes`: Daytona destroys the sandbox M minutes after creation whatever its state, and
 * - `autoStopInterval`: an idle sandbox is stopped after M minutes, then
 * - `autoDeleteInterval` (`expiredDeleteAfterMinutes`, default 0): deleted that long after it stopped.
 * The exact instant is enforced by `client.reap()` (the core records it; `flags.nativeExpiry` is false
 * because Daytona's own timers are minute-grained); Daytona's timers make sure a sandbox whose client went
 * away is gone anyway. Without a ttl, only the provider's configured intervals are sent.
 */
export function intervalsFor(ttlMs: number | undefined, options: ResolvedDaytonaOptions): DaytonaIntervals {
  const configured = {
    autoStopInterval: options.autoStopMinutes,
    autoArchiveInterval: options.autoArchiveMinutes,
    autoDeleteInterval: options.autoDeleteMinutes,
  };
  if (ttlMs === undefined) return defined(configured);
  const minutes = Math.max(1, Math.ceil(ttlMs / 60_000));
  return defined({
    ...configured,
    ttlMinutes: minutes,
    autoStopInterval: minutes,
    autoDeleteInterval: options.expiredDeleteAfterMinutes,
  });
}
