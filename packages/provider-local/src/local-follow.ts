import { type FSWatcher, watch } from "node:fs";
import { open } from "node:fs/promises";

const CHUNK_BYTES = 64 * 1024;
const POLL_MS = 200;

/**
 * Follows a growing file from a byte offset, like `tail -f`: every new byte is handed to `onChunk` in order.
 * inotify (`fs.watch`) wakes it as soon as the file changes; a slow poll covers file systems without it.
 * `finish()` reads what is left and stops, so nothing written before the writer ended is lost.
 */
export class FileFollower {
  private offset = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private watcher: FSWatcher | undefined;
  private pumping: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    private readonly path: string,
    private readonly onChunk: (chunk: Buffer) => void,
  ) {}

  /** Starts following; the first pump replays the file from the start. */
  start(): void {
    try {
      this.watcher = watch(this.path, { persistent: false }, () => this.wake());
      this.watcher.on("error", () => {});
    } catch {
      this.watcher = undefined;
    }
    this.wake();
  }

  private wake(): void {
    if (this.stopped) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pumping = this.pump().finally(() => {
      this.pumping = undefined;
      if (this.stopped) return;
      if (this.again) {
        this.again = false;
        this.wake();
        return;
      }
      this.timer = setTimeout(() => this.wake(), POLL_MS);
    });
  }

  private async pump(): Promise<void> {
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(this.path, "r");
    } catch {
      return;
    }
    try {
      const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
      for (;;) {
        const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, this.offset);
        if (bytesRead === 0) break;
        this.offset += bytesRead;
        this.onChunk(Buffer.from(buffer.subarray(0, bytesRead)));
      }
    } finally {
      await handle.close().catch(() => {});
    }
  }

  /** Reads everything that is left, then stops. */
  async finish(): Promise<void> {
    this.stop();
    while (this.pumping) await this.pumping;
    await this.pump();
  }

  /** Stops following without reading further. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.watcher?.close();
    this.watcher = undefined;
  }
}
