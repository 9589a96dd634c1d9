/**
 * Keeps the head and the tail of a stream of text within a byte and a line budget, counting what lies
 * between, so a command that prints 100 MB costs the host a few kilobytes and the model gets a result it
 * can read: the start, a marker saying how much was cut, and the end.
 */

/** Budget of one bounded text. */
export interface OutputBudget {
  /** Largest number of UTF-8 bytes kept (head and tail together). */
  readonly maxBytes: number;
  /** Largest number of lines kept (head and tail together). */
  readonly maxLines: number;
}

/** What a bounded collector kept. */
export interface BoundedText {
  /** The text as the model sees it: everything, or head + marker + tail. */
  readonly text: string;
  /** Whether anything was cut. */
  readonly truncated: boolean;
  /** Bytes seen in total. */
  readonly totalBytes: number;
  /** Lines seen in total (a final line without a newline counts). */
  readonly totalLines: number;
  /** Bytes left out. */
  readonly omittedBytes: number;
  /** Lines left out (whole or partial). */
  readonly omittedLines: number;
}

const encoder = new TextEncoder();

function byteLength(text: string): number {
  // Fast path for ASCII, which is most command output.
  return /^[\x00-\x7f]*$/.test(text) ? text.length : encoder.encode(text).length;
}

function countNewlines(text: string): number {
  let count = 0;
  for (let index = text.indexOf("\n"); index !== -1; index = text.indexOf("\n", index + 1)) count++;
  return count;
}

/** Cuts `text` to at most `maxBytes` UTF-8 bytes from the start, never inside a code point. */
function headBytes(text: string, maxBytes: number): string {
  if (byteLength(text) <= maxBytes) return text;
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    const size = byteLength(char);
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += char.length;
  }
  return text.slice(0, end);
}

/** Keeps at most `maxBytes` UTF-8 bytes from the end of `text`, never inside a code point. */
function tailBytes(text: string, maxBytes: number): string {
  if (byteLength(text) <= maxBytes) return text;
  let bytes = 0;
  let start = text.length;
  while (start > 0) {
    let step = 1;
    const code = text.charCodeAt(start - 1);
    if (code >= 0xdc00 && code <= 0xdfff && start >= 2) step = 2;
    const size = byteLength(text.slice(start - step, start));
    if (bytes + size > maxBytes) break;
    bytes += size;
    start -= step;
  }
  return text.slice(start);
}

/** Collects text chunks into a bounded head and tail. */
export class BoundedOutput {
  readonly #headBytes: number;
  readonly #headLines: number;
  readonly #tailBytes: number;
  readonly #tailLines: number;
  #head = "";
  #headFull = false;
  #tail = "";
  #totalBytes = 0;
  #totalNewlines = 0;
  #endsWithNewline = true;
  #empty = true;

  constructor(budget: OutputBudget) {
    const maxBytes = Math.max(0, Math.floor(budget.maxBytes));
    const maxLines = Math.max(0, Math.floor(budget.maxLines));
    this.#headBytes = Math.ceil(maxBytes / 2);
    this.#tailBytes = maxBytes - this.#headBytes;
    this.#headLines = Math.ceil(maxLines / 2);
    this.#tailLines = maxLines - this.#headLines;
  }

  /** Adds the next chunk. */
  push(chunk: string): void {
    if (chunk === "") return;
    this.#empty = false;
    this.#totalBytes += byteLength(chunk);
    this.#totalNewlines += countNewlines(chunk);
    this.#endsWithNewline = chunk.endsWith("\n");
    let rest = chunk;
    if (!this.#headFull) {
      const room = this.#headBytes - byteLength(this.#head);
      let taken = headBytes(rest, Math.max(0, room));
      const linesLeft = this.#headLines - countNewlines(this.#head);
      taken = firstLines(taken, linesLeft);
      this.#head += taken;
      rest = rest.slice(taken.length);
      if (rest !== "") this.#headFull = true;
    }
    if (rest === "") return;
    // The tail is trimmed on every push so memory stays at the budget whatever the total.
    this.#tail = lastLines(tailBytes(this.#tail + rest, this.#tailBytes), this.#tailLines);
  }

  /** The collected text with a marker where something was cut. */
  result(label = "output"): BoundedText {
    const totalLines = this.#empty ? 0 : this.#totalNewlines + (this.#endsWithNewline ? 0 : 1);
    if (!this.#headFull) {
      return {
        text: this.#head,
        truncated: false,
        totalBytes: this.#totalBytes,
        totalLines,
        omittedBytes: 0,
        omittedLines: 0,
      };
    }
    const keptBytes = byteLength(this.#head) + byteLength(this.#tail);
    const omittedBytes = this.#totalBytes - keptBytes;
    const keptLines = countNewlines(this.#head) + countNewlines(this.#tail);
    const omittedLines = Math.max(0, this.#totalNewlines - keptLines);
    if (omittedBytes === 0) {
      return {
        text: this.#head + this.#tail,
        truncated: false,
        totalBytes: this.#totalBytes,
        totalLines,
        omittedBytes: 0,
        omittedLines: 0,
      };
    }
    const separator = this.#head.endsWith("\n") || this.#head === "" ? "" : "\n";
    const marker = `${separator}[... ${omittedBytes} bytes (${omittedLines} lines) of ${label} cut: ${this.#totalBytes} bytes, ${totalLines} lines in total ...]\n`;
    return {
      text: `${this.#head}${marker}${this.#tail}`,
      truncated: true,
      totalBytes: this.#totalBytes,
      totalLines,
      omittedBytes,
      omittedLines,
    };
  }
}

/** The first `count` lines of `text` (each with its newline); all of it when it has fewer. */
function firstLines(text: string, count: number): string {
  if (count <= 0) return "";
  let index = -1;
  for (let seen = 0; seen < count; seen++) {
    index = text.indexOf("\n", index + 1);
    if (index === -1) return text;
  }
  return text.slice(0, index + 1);
}

/** The last `count` lines of `text` (a partial last line counts as one). */
function lastLines(text: string, count: number): string {
  if (count <= 0) return "";
  let index = text.endsWith("\n") ? text.length - 1 : text.length;
  for (let seen = 0; seen < count; seen++) {
    index = text.lastIndexOf("\n", index - 1);
    if (index === -1) return text;
  }
  return text.slice(index + 1);
}

/** Bounds one whole string. */
export function boundText(text: string, budget: OutputBudget, label?: string): BoundedText {
  const output = new BoundedOutput(budget);
  output.push(text);
  return output.result(label);
}
