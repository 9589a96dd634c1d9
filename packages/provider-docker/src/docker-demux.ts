/**
 * Splits Docker's multiplexed attach stream (non-TTY exec) into stdout and stderr. Each frame is an
 * 8-byte header (stream type, 3 zero bytes, big-endian payload length) and its payload. Payload bytes are
 * delivered as soon as they arrive, without waiting for the whole frame and without copying.
 */
export class DockerDemuxer {
  private readonly header = new Uint8Array(8);
  private headerFill = 0;
  private remaining = 0;
  private stream = 1;
  private readonly onStdout: (chunk: Uint8Array) => void;
  private readonly onStderr: (chunk: Uint8Array) => void;

  constructor(onStdout: (chunk: Uint8Array) => void, onStderr: (chunk: Uint8Array) => void) {
    this.onStdout = onStdout;
    this.onStderr = onStderr;
  }

  /** Feeds the next bytes read from the connection. */
  push(data: Uint8Array): void {
    let offset = 0;
    while (offset < data.length) {
      if (this.remaining === 0) {
        const take = Math.min(8 - this.headerFill, data.length - offset);
        this.header.set(data.subarray(offset, offset + take), this.headerFill);
        this.headerFill += take;
        offset += take;
        if (this.headerFill < 8) return;
        this.headerFill = 0;
        this.stream = this.header[0] ?? 1;
        this.remaining =
          (((this.header[4] ?? 0) << 24) >>> 0) +
          ((this.header[5] ?? 0) << 16) +
          ((this.header[6] ?? 0) << 8) +
          (this.header[7] ?? 0);
        continue;
      }
      const take = Math.min(this.remaining, data.length - offset);
      const chunk = data.subarray(offset, offset + take);
      offset += take;
      this.remaining -= take;
      if (this.stream === 2) this.onStderr(chunk);
      else this.onStdout(chunk);
    }
  }

  /** True when the stream ended in the middle of a frame (the connection was cut). */
  get truncated(): boolean {
    return this.remaining > 0 || this.headerFill > 0;
  }
}
