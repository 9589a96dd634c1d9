import { formatBytes } from "./format.js";
import { CLEAR_LINE, type TerminalStream } from "./terminal-stream.js";

/** A byte-count progress bar on a terminal; a no-op elsewhere. */
export interface ProgressBar {
  /** Counts `bytes` more as transferred. */
  add(bytes: number): void;
  /** Changes the label (e.g. the file being copied). */
  label(text: string): void;
  /** Removes the bar. Safe to call more than once. */
  done(): void;
}

/** Options of {@link startProgressBar}. */
export interface ProgressBarOptions {
  readonly enabled: boolean;
  /** Total bytes expected; 0 or less draws a counter without a bar. */
  readonly total: number;
  /** Transfers that finish sooner show nothing (default 300 ms). */
  readonly delayMs?: number | undefined;
}

/** Renders one line: `label  [#####-----]  45%  12.3 MiB / 27.0 MiB  5.1 MiB/s`. */
export function renderProgressLine(
  label: string,
  done: number,
  total: number,
  elapsedMs: number,
  width: number,
): string {
  const rate = elapsedMs > 0 ? (done / elapsedMs) * 1000 : 0;
  const amounts = total > 0 ? `${formatBytes(done)} / ${formatBytes(total)}` : formatBytes(done);
  const tail = `  ${amounts}  ${formatBytes(Math.round(rate))}/s`;
  if (total <= 0) return `${truncate(label, Math.max(8, width - tail.length))}${tail}`;
  const fraction = Math.min(1, Math.max(0, done / total));
  const percent = `${Math.floor(fraction * 100)}%`.padStart(4);
  const barWidth = 24;
  const filled = Math.round(fraction * barWidth);
  const bar = `[${"#".repeat(filled)}${"-".repeat(barWidth - filled)}]`;
  const fixed = `  ${bar} ${percent}${tail}`;
  return `${truncate(label, Math.max(8, width - fixed.length))}${fixed}`;
}

function truncate(text: string, width: number): string {
  return text.length > width ? `…${text.slice(text.length - width + 1)}` : text;
}

/** Starts a progress bar that appears only when the transfer lasts longer than `delayMs`. */
export function startProgressBar(
  stream: TerminalStream,
  label: string,
  options: ProgressBarOptions,
): ProgressBar {
  if (!options.enabled) return { add() {}, label() {}, done() {} };
  const started = Date.now();
  let current = label;
  let transferred = 0;
  let visible = false;
  let lastDraw = 0;
  let finished = false;
  const draw = (): void => {
    lastDraw = Date.now();
    const width = Math.max(40, (stream.columns ?? 80) - 1);
    stream.write(
      CLEAR_LINE + renderProgressLine(current, transferred, options.total, lastDraw - started, width),
    );
  };
  const timer = setTimeout(() => {
    if (finished) return;
    visible = true;
    draw();
  }, options.delayMs ?? 300);
  timer.unref();
  return {
    add(bytes) {
      transferred += bytes;
      // At most ten redraws a second: a terminal is slower than a fast copy.
      if (visible && Date.now() - lastDraw >= 100) draw();
    },
    label(text) {
      current = text;
    },
    done() {
      finished = true;
      clearTimeout(timer);
      if (visible) stream.write(CLEAR_LINE);
      visible = false;
    },
  };
}
