import { constants, type FSWatcher, type Stats, watch } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import type { WatchEvent } from "@sbox/core/spec";
import { localError, throwIfAborted } from "./local-errors.js";
import {
  at,
  closeQuietly,
  DIRECTORY_FLAGS,
  fstatFd,
  O_PATH,
  openFd,
  resolveEntry,
} from "./local-fd-paths.js";
import { childSandboxPath, type SandboxView } from "./local-paths.js";

const POLL_MS = 250;
const DEBOUNCE_MS = 15;

interface Entry {
  readonly kind: "file" | "dir" | "symlink" | "other";
  readonly size: number;
  readonly mtimeMs: number;
  readonly ino: number;
}

type Snapshot = Map<string, Entry>;

function entryOfStats(stats: Stats): Entry {
  const kind = stats.isSymbolicLink()
    ? "symlink"
    : stats.isDirectory()
      ? "dir"
      : stats.isFile()
        ? "file"
        : "other";
  return { kind, size: stats.size, mtimeMs: stats.mtimeMs, ino: stats.ino };
}

async function entryAt(path: string): Promise<Entry | undefined> {
  try {
    return entryOfStats(await lstat(path));
  } catch {
    return undefined;
  }
}

/**
 * Everything inside the directory open as `dir` (symlinks are entries, never followed), keyed by sandbox path.
 * Subdirectories are opened relative to `dir` with `O_NOFOLLOW`, so a scan never wanders out of the sandbox.
 */
async function scan(dir: number, sandboxDir: string, recursive: boolean, into: Snapshot): Promise<void> {
  let names: string[];
  try {
    names = await readdir(at(dir));
  } catch {
    return;
  }
  await Promise.all(
    names.map(async (name) => {
      const path = childSandboxPath(sandboxDir, name);
      const entry = await entryAt(at(dir, name));
      if (!entry) return;
      into.set(path, entry);
      if (!recursive || entry.kind !== "dir") return;
      let child: number;
      try {
        child = await openFd(at(dir, name), DIRECTORY_FLAGS);
      } catch {
        return; // no longer a directory
      }
      try {
        await scan(child, path, recursive, into);
      } finally {
        await closeQuietly(child);
      }
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
  const resolved = await resolveEntry(view, path, { followFinal: true });
  // The watched entry is pinned by a descriptor for the watch's whole life: inotify and every scan reach it
  // through that descriptor, whatever is renamed or swapped around it later.
  let pinned: number;
  try {
    // The area root is reached through its own descriptor's /proc link, which must be followed.
    pinned = await openFd(resolved.at, O_PATH | (resolved.name === undefined ? 0 : constants.O_NOFOLLOW));
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT")
      throw localError("NotFound", `no such file or directory: ${path}`);
    throw error;
  } finally {
    await resolved.close();
  }
  const isDir = (await fstatFd(pinned)).isDirectory();
  const sandboxPath = resolved.path;
  const take = async (): Promise<Snapshot> => {
    const snapshot: Snapshot = new Map();
    if (isDir) await scan(pinned, sandboxPath, options.recursive, snapshot);
    else {
      try {
        snapshot.set(sandboxPath, entryOfStats(await fstatFd(pinned)));
      } catch {
        // gone
      }
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
  // Not node's recursive watch: it walks subdirectories by path. Nested changes are caught by the rescans.
  try {
    watcher = watch(at(pinned), { persistent: false }, trigger);
  } catch {
    watcher = undefined;
  }
  watcher?.on("error", () => {});
  schedule(POLL_MS);
  return {
    async close() {
      if (closed) return;
      closed = true;
      if (timer) clearTimeout(timer);
      watcher?.close();
      if (running) await running;
      await closeQuietly(pinned);
    },
  };
}
