/**
 * Daytona's session logs are one byte stream with stdout and stderr labelled in it: `01 01 01` starts
 * stdout, `02 02 02` starts stderr (the daemon's `log.STDOUT_PREFIX` / `STDERR_PREFIX`, the SDK's
 * `STDOUT_PREFIX_BYTES` / `STDERR_PREFIX_BYTES`), and the daemon sends the log file as it grows, cut into
 * WebSocket frames anywhere (a marker may be split across frames). The SDK's own reader holds back the
 * last two bytes of every frame whatever they are, so a 2-byte `a\n` only arrives when the command ends;
 * this one delivers every byte as soon as it cannot be part of a marker.
 */

const STDOUT_BYTE = 0x01;
const STDERR_BYTE = 0x02;
const MARKER_LENGTH = 3;

/** Where demultiplexed output goes: raw bytes, never decoded here (a character may span frames). */
export interface DaytonaLogSink {
  onStdout(chunk: Uint8Array): void;
  onStderr(chunk: Uint8Array): void;
}

/**
 * How many bytes at the end of `bytes`, from `from` on, could be the start of a marker that the next frame
 * completes: a run of one marker byte, shorter than a marker. Only those are held back.
 */
function pendingMarkerLength(bytes: Uint8Array, from: number): number {
  const last = bytes[bytes.length - 1];
  if (bytes.length <= from || (last !== STDOUT_BYTE && last !== STDERR_BYTE)) return 0;
  let run = 1;
  while (run < MARKER_LENGTH - 1 && bytes.length - 1 - run >= from && bytes[bytes.length - 1 - run] === last)
    run++;
  return run;
}

/**
 * A streaming demultiplexer of Daytona's labelled log stream. `push` each frame as it arrives, `end` once
 * the stream closed (a partial marker then is output: it was the command's own bytes). Bytes before the
 * first marker (the daemon always starts with one) count as stdout, so nothing is dropped. A command that
 * prints the marker bytes itself switches streams as it would in Daytona's own demultiplexers: the framing
 * cannot tell them apart.
 */
export class DaytonaLogDemux {
  private stream: "stdout" | "stderr" = "stdout";
  private held: Uint8Array = new Uint8Array(0);

  constructor(private readonly sink: DaytonaLogSink) {}

  /** Takes one frame; delivers everything of it that is unambiguous now. */
  push(frame: Uint8Array): void {
    if (frame.length === 0) return;
    let bytes = frame;
    if (this.held.length > 0) {
      bytes = new Uint8Array(this.held.length + frame.length);
      bytes.set(this.held);
      bytes.set(frame, this.held.length);
    }
    let from = 0;
    let at = 0;
    // Every position with a whole marker's length after it is decided here.
    while (at <= bytes.length - MARKER_LENGTH) {
      const byte = bytes[at];
      if (
        (byte === STDOUT_BYTE || byte === STDERR_BYTE) &&
        bytes[at + 1] === byte &&
        bytes[at + 2] === byte
      ) {
        this.emit(bytes.subarray(from, at));
        this.stream = byte === STDOUT_BYTE ? "stdout" : "stderr";
        at += MARKER_LENGTH;
        from = at;
      } else {
        at++;
      }
    }
    // The last one or two bytes may open a marker the next frame completes: only those wait.
    const end = bytes.length - pendingMarkerLength(bytes, at);
    this.emit(bytes.subarray(from, end));
    // A copy: the frame's buffer may be reused by the socket.
    this.held = bytes.slice(end);
  }

  /** The stream ended: bytes held as a possible marker were the command's own. */
  end(): void {
    const held = this.held;
    this.held = new Uint8Array(0);
    this.emit(held);
  }

  private emit(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    // A copy, so the sink may keep it after the next frame arrives.
    const chunk = bytes.slice();
    if (this.stream === "stdout") this.sink.onStdout(chunk);
    else this.sink.onStderr(chunk);
  }
}
