import { type FSWatcher, watch } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import type { WatchEvent } from "@sbox/core/spec";
import { localError, throwIfAborted } from "./local-errors.js";
import { childSandboxPath, resolveSandboxPath, type SandboxView } from "./local-paths.js";

const POLL_MS = 250;
const DEBOUNCE_MS = 15;

interface Entry {
  readonly kind: "file" | "dir" | "symlink" | "other";
  readonly size: number;
  readonly mtimeMs: number;
  readonly ino: number;
}

type Snapshot = Map<string, Entry>;

async function entryOf(hostPath: string): Promise<Entry | undefined> {
  try {
    const stats = await lstat(hostPath);
    const kind = stats.isSymbolicLink()
      ? "symlink"
      : stats.isDirectory()
        ? "dir"
        : stats.isFile()
          ? "file"
          : "other";
    return { kind, size: stats.size, mtimeMs: stats.mtimeMs, ino: stats.ino };
  } catch {
    return undefined;
  }
}

/** Everything under `hostDir` (symlinks are entries, never followed), keyed by sandbox path. */
async function scan(hostDir: string, sandboxDir: string, recursive: boolean, into: Snapshot): Promise<void> {
  let names: string[];
  try {
    names = await readdir(hostDir);
  } catch {
    return;
  }
  await Promise.all(
    names.map(async (name) => {
      const host = `${hostDir}/${name}`;
      const path = childSandboxPath(sandboxDir, name);
      const entry = await entryOf(host);
      if (!entry) return;
      into.set(path, entry);
      if (recursive && entry.kind === "dir") await scan(host, path, recursive, into);
    }),
  );
}

function changed(a: Entry, b: Entry): boolean {
  return a.size !== b.size || a.mtimeMs !== b.mtimeMs || a.ino !== b.ino || a.kind !== b.kind;
}

/**
 * Watches a directory (or one file) for create, modify and delete events. inotify (`fs.watch`) triggers a
 * rescan at once; a periodic rescan catches what inotify misses (nested directories without recursive
 * support, bursts). Each rescan is diffed against the last, so events are exact whatever triggered them.
 */
export async function watchSandboxPath(
  view: SandboxView,
  path: string,
  options: { signal: AbortSignal; recursive: boolean; onEvent(event: WatchEvent): void },
): Promise<{ close(): Promise<void> }> {
  throwIfAborted(options.signal, "files.watch");
  const resolved = await resolveSandboxPath(view, path, { followFinal: true });
  const root = await entryOf(resolved.hostPath);
  if (!root) throw localError("NotFound", `no such file or directory: ${path}`);
  const isDir = root.kind === "dir";
  const take = async (): Promise<Snapshot> => {
    const snapshot: Snapshot = new Map();
    if (isDir) await scan(resolved.hostPath, resolved.sandboxPath, options.recursive, snapshot);
    else {
      const entry = await entryOf(resolved.hostPath);
      if (entry) snapshot.set(resolved.sandboxPath, entry);
    }
    return snapshot;
  };
  let previous = await take();
  let closed = false;
  let running: Promise<void> | undefined;
  let again = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const emit = (event: WatchEvent) => {
    try {
      options.onEvent(event);
    } catch {
      // A throwing listener must not stop the watch.
    }
  };
  const rescan = async () => {
    const next = await take();
    if (closed) return;
    for (const [entryPath, entry] of next) {
      const before = previous.get(entryPath);
      if (!before) emit({ type: "create", path: entryPath });
      else if (before.kind !== entry.kind) {
        emit({ type: "delete", path: entryPath });
        emit({ type: "create", path: entryPath });
      } else if (entry.kind !== "dir" && changed(before, entry)) emit({ type: "modify", path: entryPath });
    }
    for (const entryPath of previous.keys())
      if (!next.has(entryPath)) emit({ type: "delete", path: entryPath });
    previous = next;
  };
  const schedule = (delay: number) => {
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      running = rescan()
        .catch(() => {})
        .finally(() => {
          running = undefined;
          if (again) {
            again = false;
            schedule(DEBOUNCE_MS);
          } else schedule(POLL_MS);
        });
    }, delay);
  };
  let watcher: FSWatcher | undefined;
  const trigger = () => schedule(DEBOUNCE_MS);
  try {
    watcher = watch(resolved.hostPath, { recursive: isDir && options.recursive, persistent: false }, trigger);
  } catch {
    try {
      watcher = watch(resolved.hostPath, { persistent: false }, trigger);
    } catch {
      watcher = undefined;
    }
  }
  watcher?.on("error", () => {});
  schedule(POLL_MS);
  return {
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      watcher?.close();
      if (running) await running;
    },
  };
}
