import { closeSync, openSync, readSync } from "node:fs";
import type { RunningSandbox } from "./local-command.js";

interface Entry {
  /** `/proc/<anchor>/stat`, opened once: bound to that very process, so reads fail once it is gone. */
  readonly statFd: number;
  readonly running: RunningSandbox;
}

const statBuffer = Buffer.alloc(1024);

/** State (`R`, `S`, `Z`...) and start time of the process behind an open `/proc/<pid>/stat`, or undefined. */
function readStat(fd: number): { state: string; startTime: number } | undefined {
  let length: number;
  try {
    length = readSync(fd, statBuffer, 0, statBuffer.length, 0);
  } catch {
    // ESRCH: the process has exited and been reaped (its pid may already belong to another one).
    return undefined;
  }
  const text = statBuffer.toString("latin1", 0, length);
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const startTime = Number(fields[19]);
  return fields[0] && Number.isInteger(startTime) ? { state: fields[0], startTime } : undefined;
}

const isLive = (stat: { state: string } | undefined) =>
  stat !== undefined && stat.state !== "Z" && stat.state !== "X";

/**
 * The running sandboxes of one provider instance, kept between commands. Without it every command would read
 * `holder.json` and `cgroup.json` and check the holder's `/proc` entry. A kept entry is checked with one read
 * of the anchor's stat descriptor, which stops working the moment the anchor is gone (another program may
 * have stopped the sandbox), so a dead sandbox is never handed out. At most `limit` sandboxes are kept; the
 * least recently used one is let go first.
 */
export class HolderCache {
  readonly #entries = new Map<string, Entry>();

  constructor(private readonly limit = 64) {}

  /** The sandbox kept for `key` when its anchor still lives, else `undefined`. */
  get(key: string): RunningSandbox | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (!isLive(readStat(entry.statFd))) {
      this.forget(key);
      return undefined;
    }
    // Most recently used last, so eviction takes the first.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.running;
  }

  /** Keeps `running` for `key`, when its anchor is (still) the process recorded. Returns whether it was kept. */
  keep(key: string, running: RunningSandbox): boolean {
    const { pid, startTime } = running.holder.anchor;
    let statFd: number;
    try {
      statFd = openSync(`/proc/${pid}/stat`, "r");
    } catch {
      return false;
    }
    const stat = readStat(statFd);
    if (!isLive(stat) || stat?.startTime !== startTime) {
      closeSync(statFd);
      return false;
    }
    this.forget(key);
    this.#entries.set(key, { statFd, running });
    while (this.#entries.size > this.limit) this.forget(this.#entries.keys().next().value as string);
    return true;
  }

  /** Lets go of what is kept for `key` (the sandbox stopped or was destroyed). */
  forget(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    closeSync(entry.statFd);
  }

  /** Lets go of everything (the client is disposed). */
  clear(): void {
    for (const key of [...this.#entries.keys()]) this.forget(key);
  }

  /** How many sandboxes are kept (for tests). */
  get size(): number {
    return this.#entries.size;
  }
}
