/**
 * A container's log as the kubelet keeps it: stdout and stderr interleaved as written, each chunk with its
 * time, bounded like the kubelet's rotation (the oldest bytes go once the log passes `limitBytes`), with
 * followers woken on every write and released when the container ends. The previous instance's log is
 * kept after a restart (`kubectl logs --previous`).
 */

/** One write. */
export interface LogChunk {
  /** Position of the chunk in the whole log (survives rotation). */
  readonly seq: number;
  readonly at: number;
  readonly bytes: Buffer;
}

/** What `GET .../log` may ask for. */
export interface LogQuery {
  readonly tailLines?: number | undefined;
  readonly sinceMs?: number | undefined;
  readonly limitBytes?: number | undefined;
  readonly timestamps?: boolean | undefined;
}

/** The log of one container instance. */
export class ContainerLog {
  private readonly chunks: LogChunk[] = [];
  private size = 0;
  private written = 0;
  private ended = false;
  private readonly followers = new Set<() => void>();

  constructor(private readonly limitBytes: number = 10 * 1024 * 1024) {}

  /** Appends output. */
  write(bytes: Uint8Array, at: number): void {
    if (this.ended || bytes.byteLength === 0) return;
    this.chunks.push({ seq: this.written++, at, bytes: Buffer.from(bytes) });
    this.size += bytes.byteLength;
    while (this.size > this.limitBytes && this.chunks.length > 1)
      this.size -= this.chunks.shift()!.bytes.byteLength;
    this.wake();
  }

  /** No more output will come (the container instance ended). */
  end(): void {
    this.ended = true;
    this.wake();
  }

  /** Whether the instance has ended. */
  get finished(): boolean {
    return this.ended;
  }

  private wake(): void {
    for (const wake of [...this.followers]) wake();
  }

  /** Resolves at the next write or at the end (or after `ms`). */
  changed(ms: number): Promise<void> {
    if (this.ended) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.followers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.followers.add(done);
    });
  }

  /** Lines (or bytes) written so far that the query selects, and the position after them. */
  read(query: LogQuery): { text: Buffer; next: number } {
    const since = query.sinceMs;
    const selected = this.chunks.filter((c) => since === undefined || c.at >= since);
    let lines: { at: number; bytes: Buffer }[] = [];
    for (const chunk of selected) {
      let start = 0;
      for (let i = 0; i < chunk.bytes.length; i++) {
        if (chunk.bytes[i] === 0x0a) {
          lines.push({ at: chunk.at, bytes: chunk.bytes.subarray(start, i + 1) });
          start = i + 1;
        }
      }
      if (start < chunk.bytes.length) lines.push({ at: chunk.at, bytes: chunk.bytes.subarray(start) });
    }
    if (query.tailLines !== undefined) lines = query.tailLines === 0 ? [] : lines.slice(-query.tailLines);
    const parts = lines.map((l) =>
      query.timestamps ? Buffer.concat([Buffer.from(`${new Date(l.at).toISOString()} `), l.bytes]) : l.bytes,
    );
    let text = Buffer.concat(parts);
    if (query.limitBytes !== undefined) text = text.subarray(0, query.limitBytes);
    return { text, next: this.written };
  }

  /** Chunks from position `from` on (for following). */
  since(from: number): LogChunk[] {
    return this.chunks.filter((c) => c.seq >= from);
  }
}
