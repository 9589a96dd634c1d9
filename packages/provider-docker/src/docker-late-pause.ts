import { SandboxError } from "@sbox/core/spec";

/** How long an exec create refused with "is paused" is tried again (see {@link createPastLatePause}). */
const LATE_PAUSE_WINDOW_MS = 1_000;

/**
 * `create`, tried again for a short while when the engine refuses it because the container "is paused".
 * Docker 20.10 takes containerd's paused/resumed events in the background: a `paused` event handled after
 * the unpause that followed it marks a container that was just resumed (and that inspect showed running)
 * paused again, until the `resumed` event that comes next. A create changes nothing in the container, so
 * trying it again is safe; a container that really is paused is still refused after the window.
 */
export async function createPastLatePause<T>(
  signal: AbortSignal,
  create: () => Promise<T>,
  windowMs: number = LATE_PAUSE_WINDOW_MS,
): Promise<T> {
  const deadline = Date.now() + windowMs;
  for (;;) {
    try {
      return await create();
    } catch (error) {
      const paused =
        SandboxError.isInstance(error) && error.code === "InvalidState" && /is paused/i.test(error.message);
      if (!paused || signal.aborted || Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
