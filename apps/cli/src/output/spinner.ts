import { CLEAR_LINE, type TerminalStream } from "./terminal-stream.js";

/** A spinner line on a terminal; a no-op elsewhere. */
export interface Spinner {
  /** Changes the text shown next to the spinner. */
  update(text: string): void;
  /** Removes the spinner line. Safe to call more than once. */
  stop(): void;
}

/** Options of {@link startSpinner}. */
export interface SpinnerOptions {
  /** Draw at all (false when the stream is not a terminal, or output is JSON). */
  readonly enabled: boolean;
  /** Waits shorter than this show nothing, so fast commands do not flicker (default 300 ms). */
  readonly delayMs?: number | undefined;
  readonly style?: ((text: string) => string) | undefined;
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/** Starts a spinner that appears only if the wait lasts longer than `delayMs`. */
export function startSpinner(stream: TerminalStream, text: string, options: SpinnerOptions): Spinner {
  if (!options.enabled) return { update() {}, stop() {} };
  let label = text;
  let frame = 0;
  let drawn = false;
  let interval: NodeJS.Timeout | undefined;
  const style = options.style ?? ((value: string) => value);
  const draw = (): void => {
    const width = Math.max(10, (stream.columns ?? 80) - 3);
    const shown = label.length > width ? `${label.slice(0, width - 1)}…` : label;
    stream.write(`${CLEAR_LINE}${style(FRAMES[frame % FRAMES.length] ?? "")} ${shown}`);
    frame += 1;
    drawn = true;
  };
  const delay = setTimeout(() => {
    draw();
    interval = setInterval(draw, 80);
    interval.unref();
  }, options.delayMs ?? 300);
  // A spinner must never keep the process alive on its own.
  delay.unref();
  return {
    update(next) {
      label = next;
    },
    stop() {
      clearTimeout(delay);
      if (interval) clearInterval(interval);
      interval = undefined;
      if (drawn) stream.write(CLEAR_LINE);
      drawn = false;
    },
  };
}

/** Runs `work` with a spinner shown while it lasts; the spinner is gone before the result is returned. */
export async function withSpinner<T>(
  stream: TerminalStream,
  text: string,
  options: SpinnerOptions,
  work: () => Promise<T>,
): Promise<T> {
  const spinner = startSpinner(stream, text, options);
  try {
    return await work();
  } finally {
    spinner.stop();
  }
}
