/** Timers beyond this are clamped by Node to 1 ms; an expiry that far away is left to the next touch and reap. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * One timer per sandbox whose time to live is running in this provider instance: when it fires, `onDue`
 * re-reads the sandbox and stops it if its time really ran out (a later setTimeout moves the expiry, and
 * re-arms). So a sandbox ends on time while the program that set its time lives, not only at the next call
 * that touches it or at `client.reap()` (which still covers sandboxes whose program is gone: the flag
 * `nativeExpiry` stays false). Timers are unref'd: they never keep a program alive. A stop a timer started
 * can take a while (the holder, the network stack): `settled` lets every other call on that sandbox wait
 * for it, so none races it (a destroy renaming the directory under the stop's lock left that lock behind).
 */
export class LocalExpiryTimers {
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly due = new Map<string, Promise<void>>();

  constructor(private readonly onDue: (id: string) => Promise<unknown>) {}

  /** Arms (or re-arms) the timer of `id` for `expiresAt` (ms since the epoch). */
  arm(id: string, expiresAt: number): void {
    this.disarm(id);
    const delay = Math.max(0, expiresAt - Date.now());
    if (delay > MAX_TIMER_MS) return;
    const timer = setTimeout(() => {
      this.timers.delete(id);
      // A sandbox destroyed meanwhile, or any other failure, is for the next call to report.
      const running: Promise<void> = this.onDue(id)
        .then(
          () => undefined,
          () => undefined,
        )
        .finally(() => {
          if (this.due.get(id) === running) this.due.delete(id);
        });
      this.due.set(id, running);
    }, delay + 50);
    timer.unref();
    this.timers.set(id, timer);
  }

  /** Resolves once a stop the timer of `id` started has finished; at once when none runs. */
  settled(id: string): Promise<void> {
    return this.due.get(id) ?? Promise.resolve();
  }

  /** Forgets the timer of `id` (destroyed). */
  disarm(id: string): void {
    const timer = this.timers.get(id);
    if (timer !== undefined) clearTimeout(timer);
    this.timers.delete(id);
  }

  /** Forgets every timer (the provider is disposed). */
  clear(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }
}
