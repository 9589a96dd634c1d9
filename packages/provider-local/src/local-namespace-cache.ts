import { closeSync, openSync, readSync } from "node:fs";

/** A descriptor of a sandbox's PID namespace, lent to one command start; `release()` exactly once after it. */
export interface NamespaceLease {
  readonly fd: number;
  release(): void;
}

interface Entry {
  /** `/proc/<holder>/stat`, opened once: bound to that very process, so reads fail once it is gone. */
  readonly statFd: number;
  /** `/proc/<holder>/ns/pid`. */
  readonly nsFd: number;
  /** Leases not yet released; the descriptors are closed only when this is 0. */
  refs: number;
  dropped: boolean;
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
 * Open descriptors of sandboxes' PID namespaces, kept between commands of one provider instance. Without
 * them every command would read `holder.json`, read the holder's `/proc` entry to check it is the same
 * process, and open and close its namespace: about a quarter of a millisecond on each command. A kept
 * entry is checked with one read of the holder's stat descriptor, which stops working the moment the
 * holder is gone (another program may have stopped the sandbox), so a dead namespace is never lent.
 * At most `limit` sandboxes are kept; the least recently used one is let go first.
 */
export class NamespaceCache {
  readonly #entries = new Map<string, Entry>();

  constructor(private readonly limit = 32) {}

  /** A lease on the namespace kept for `key` when its holder still lives, else `undefined`. */
  lease(key: string): NamespaceLease | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (!isLive(readStat(entry.statFd))) {
      this.forget(key);
      return undefined;
    }
    // Most recently used last, so eviction takes the first.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return this.#lend(entry);
  }

  /**
   * Opens the namespace of holder `pid` (which must have started at `startTime`, so a reused pid is not
   * mistaken for it), keeps it for `key` and lends it. `undefined` when that process is gone.
   */
  adopt(key: string, pid: number, startTime: number): NamespaceLease | undefined {
    let statFd: number;
    try {
      statFd = openSync(`/proc/${pid}/stat`, "r");
    } catch {
      return undefined;
    }
    const stat = readStat(statFd);
    let nsFd: number | undefined;
    try {
      if (isLive(stat) && stat?.startTime === startTime) nsFd = openSync(`/proc/${pid}/ns/pid`, "r");
    } catch {
      nsFd = undefined;
    }
    // The namespace descriptor was opened after the check: check again, the holder may have died between.
    if (nsFd === undefined || !isLive(readStat(statFd))) {
      closeSync(statFd);
      if (nsFd !== undefined) closeSync(nsFd);
      return undefined;
    }
    this.forget(key);
    const entry: Entry = { statFd, nsFd, refs: 0, dropped: false };
    this.#entries.set(key, entry);
    while (this.#entries.size > this.limit) {
      const oldest = this.#entries.keys().next().value as string;
      this.forget(oldest);
    }
    return this.#lend(entry);
  }

  /** Lets go of what is kept for `key` (the sandbox stopped or was destroyed). */
  forget(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    entry.dropped = true;
    if (entry.refs === 0) close(entry);
  }

  /** Lets go of everything (the client is disposed). */
  clear(): void {
    for (const key of [...this.#entries.keys()]) this.forget(key);
  }

  /** How many sandboxes are kept (for tests). */
  get size(): number {
    return this.#entries.size;
  }

  #lend(entry: Entry): NamespaceLease {
    entry.refs++;
    let released = false;
    return {
      fd: entry.nsFd,
      release: () => {
        if (released) return;
        released = true;
        entry.refs--;
        if (entry.dropped && entry.refs === 0) close(entry);
      },
    };
  }
}

function close(entry: Entry): void {
  closeSync(entry.statFd);
  closeSync(entry.nsFd);
}
