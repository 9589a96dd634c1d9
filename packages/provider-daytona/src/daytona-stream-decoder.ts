import { SandboxError } from "@sbox/core/spec";
import { DAYTONA_PROVIDER_NAME } from "./daytona-names.js";

/**
 * One line of the supervisor's encoding: one chunk of the command's output as unwrapped base64, never
 * empty (see `SUPERVISOR` in `daytona-exec-signals.ts`).
 */
const ENCODED_LINE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$/;

/** The longest line the supervisor prints (4000 characters of base64), with room to spare. */
const MAX_LINE_CHARS = 8192;

/** How much of an unexpected line an error quotes (a supervisor's own message, most likely). */
const QUOTED_CHARS = 200;

/**
 * Decodes one stream of a supervised command. Daytona's daemon logs a command's output line by line through
 * shell labellers (`while IFS= read -r line || [ -n "$line" ]; do printf '<label>%s\n' "$line"; done`),
 * which drop NUL bytes and add a newline to an unterminated last line, so the supervisor turns each chunk
 * the command prints into one line of base64 before the daemon sees it; this turns them back, chunk by
 * chunk as the lines complete, into the bytes printed. Anything that is not such a line (a shell's error
 * message, a truncated line) is a `Provider` error naming the stream — never bytes passed on as output.
 */
export class DaytonaStreamDecoder {
  private pending = "";

  constructor(
    private readonly stream: "stdout" | "stderr",
    private readonly deliver: (bytes: Uint8Array) => void,
  ) {}

  /** Takes demultiplexed bytes of the stream (lines may be cut anywhere); delivers every complete line. */
  push(bytes: Uint8Array | string): void {
    // base64 is ASCII: any other byte makes the line invalid, whatever it decodes to here.
    this.pending += typeof bytes === "string" ? bytes : Buffer.from(bytes).toString("latin1");
    let newline = this.pending.indexOf("\n");
    while (newline !== -1) {
      const line = this.pending.slice(0, newline);
      this.pending = this.pending.slice(newline + 1);
      this.line(line);
      newline = this.pending.indexOf("\n");
    }
    if (this.pending.length > MAX_LINE_CHARS)
      throw this.invalid(this.pending, "carried a line too long to be the supervisor's");
  }

  /** The stream ended: a line left without its newline was cut short. */
  end(): void {
    if (this.pending === "") return;
    const rest = this.pending;
    this.pending = "";
    throw this.invalid(rest, "ended in the middle of a line");
  }

  private line(line: string): void {
    if (!ENCODED_LINE.test(line))
      throw this.invalid(line, "carried a line that is not the supervisor's encoding");
    this.deliver(new Uint8Array(Buffer.from(line, "base64")));
  }

  private invalid(line: string, what: string): SandboxError {
    const quoted = JSON.stringify(line.length > QUOTED_CHARS ? `${line.slice(0, QUOTED_CHARS)}…` : line);
    return new SandboxError("Provider", `daytona: the command's ${this.stream} log ${what}: ${quoted}`, {
      provider: DAYTONA_PROVIDER_NAME,
      retryable: false,
    });
  }
}

/** Decodes a whole stream at once (the synchronous exec's answer). */
export function decodeDaytonaStream(stream: "stdout" | "stderr", text: string): Uint8Array {
  const chunks: Uint8Array[] = [];
  const decoder = new DaytonaStreamDecoder(stream, (bytes) => chunks.push(bytes));
  decoder.push(text);
  decoder.end();
  return new Uint8Array(Buffer.concat(chunks));
}
