import * as fs from "node:fs";
import { constants } from "node:fs";
import { chown, mkdir, readlink } from "node:fs/promises";
import { promisify } from "node:util";
import { localError } from "./local-errors.js";
import {
  type AreaName,
  areaHost,
  areaOf,
  components,
  outsideError,
  type SandboxView,
  visiblePath,
} from "./local-paths.js";

/** `O_PATH` (the same value on x86_64 and aarch64): a descriptor that pins an entry without opening its content. */
export const O_PATH = 0o10000000;
/** A pinned directory, never through a symlink. */
export const DIRECTORY_FLAGS: number = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/** A pinned entry of any type; a symlink is pinned itself, not followed. */
const ENTRY_FLAGS = O_PATH | constants.O_NOFOLLOW;
const MAX_SYMLINK_HOPS = 40;

const closeFd = promisify(fs.close);
/** `open(2)` returning the bare descriptor (node's FileHandle cannot hold an `O_PATH` descriptor). */
export const openFd = promisify(fs.open) as (path: string, flags: number, mode?: number) => Promise<number>;
/** `fstat(2)` of a bare descriptor. */
export const fstatFd: (fd: number) => Promise<fs.Stats> = promisify(fs.fstat);

/**
 * The path that reaches `name` inside the directory open as `fd` (or the directory itself): the kernel
 * follows `/proc/self/fd/<fd>` to that very directory, never through its path again, and only `name` is
 * looked up in it. With a single-component `name` this is the `*at()` family (openat, mkdirat, unlinkat,
 * renameat...) for node's path-based calls: nothing a sandbox process swaps in the directory's ancestors
 * can redirect it.
 */
export function at(fd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`;
}

/** Opens a host directory (an area root) as a pinned descriptor. */
export function openDirectory(path: string): Promise<number> {
  return openFd(path, DIRECTORY_FLAGS);
}

/** Closes a descriptor, ignoring errors (it is being let go of). */
export async function closeQuietly(fd: number | undefined): Promise<void> {
  if (fd !== undefined) await closeFd(fd).catch(() => {});
}

/**
 * Hands a directory the host just created as `name` inside `dir` to the sandbox user (a no-op unless the
 * view names an owner). It is pinned first: by now its name may be a symlink a sandbox process put there.
 */
export async function giveDirectoryToSandbox(view: SandboxView, dir: number, name: string): Promise<void> {
  if (!view.owner) return;
  let fd: number;
  try {
    fd = await openFd(at(dir, name), DIRECTORY_FLAGS);
  } catch {
    return; // no longer the directory made: nothing of ours to hand over
  }
  try {
    await chown(at(fd), view.owner.uid, view.owner.gid);
  } finally {
    await closeQuietly(fd);
  }
}

/** A path resolved inside a sandbox area, held by descriptors until `close()`. */
export interface ResolvedEntry {
  readonly area: AreaName;
  /** The components below the area root, the final one included. */
  readonly rest: readonly string[];
  /** The open directory holding the final component (the area root itself when `name` is undefined). */
  readonly dir: number;
  /** The final component; `undefined` when the path is the area root. */
  readonly name: string | undefined;
  /** The path as commands see it (`/workspace/a/b`, or the host path without isolation). */
  readonly path: string;
  /** `at(dir, name)`: what path-based calls on the final component are given. */
  readonly at: string;
  /** Lets go of every descriptor. */
  close(): Promise<void>;
}

/** How `resolveEntry` treats the final component and missing directories. */
export interface ResolveOptions {
  /** Follow a symlink in the final component (read, write, list, watch) or address the link itself. */
  readonly followFinal: boolean;
  /** Create missing directories on the way (`"parents"`), or also the final component (`"all"`). */
  readonly create?: "parents" | "all" | undefined;
}

function errnoOf(error: unknown): string | undefined {
  return (error as { code?: string }).code;
}

/**
 * Resolves an API path inside the sandbox by walking it one component at a time from the area's root
 * directory, each step opened with `O_NOFOLLOW` relative to the descriptor of the step before. A symlink is
 * read and its target resolved again as a sandbox path (an absolute target is a sandbox path, never a host
 * path); `..` returns to the descriptor it came from and may not leave the area. Because every step is
 * relative to a descriptor, a directory that a sandbox process swaps for a symlink while the host works
 * cannot lead anywhere outside: the swap is seen (and followed as a sandbox path) or the open fails.
 */
export async function resolveEntry(
  view: SandboxView,
  path: string,
  options: ResolveOptions,
): Promise<ResolvedEntry> {
  if (typeof path !== "string" || path === "" || path.includes("\0")) {
    throw localError("Validation", "path must be a non-empty string without NUL characters");
  }
  const start = areaOf(view, path);
  if (!start) throw outsideError(path);
  let area = start.area;
  const queue = [...start.rest];
  const stack: { fd: number; name: string }[] = [];
  let root = await openDirectory(areaHost(view, area));
  let finalName: string | undefined;
  // Components below one that does not exist: only `..` still matters for them (it may lead back out).
  const missing: string[] = [];
  let hops = 0;
  let via: { link: string; target: string } | undefined;
  const top = () => (stack.length > 0 ? stack[stack.length - 1]!.fd : root);
  const closeAll = async () => {
    await Promise.all([...stack.map((frame) => closeQuietly(frame.fd)), closeQuietly(root)]);
    stack.length = 0;
  };
  try {
    while (queue.length > 0) {
      const part = queue.shift()!;
      if (part === "..") {
        if (missing.length > 0) {
          missing.pop();
          continue;
        }
        const frame = stack.pop();
        if (!frame) throw outsideError(path, via);
        await closeQuietly(frame.fd);
        continue;
      }
      if (missing.length > 0) {
        missing.push(part);
        continue;
      }
      const isFinal = queue.length === 0;
      if (isFinal && !options.followFinal) {
        finalName = part;
        break;
      }
      let fd: number;
      try {
        fd = await openFd(at(top(), part), ENTRY_FLAGS);
      } catch (error) {
        const code = errnoOf(error);
        if (code !== "ENOENT") throw error;
        const creates = options.create === "all" || (options.create === "parents" && !isFinal);
        if (!creates) {
          if (isFinal) {
            finalName = part;
            break;
          }
          missing.push(part);
          continue;
        }
        try {
          await mkdir(at(top(), part), 0o755);
          await giveDirectoryToSandbox(view, top(), part);
        } catch (made) {
          if (errnoOf(made) !== "EEXIST") throw made;
        }
        queue.unshift(part); // open what is there now
        continue;
      }
      const stats = await fstatFd(fd);
      if (stats.isSymbolicLink()) {
        await closeQuietly(fd);
        if (++hops > MAX_SYMLINK_HOPS) {
          throw localError("Validation", `path ${JSON.stringify(path)}: too many levels of symbolic links`);
        }
        const target = await readlink(at(top(), part));
        via = { link: visiblePath(view, area, [...stack.map((frame) => frame.name), part]), target };
        if (target.startsWith("/")) {
          const next = areaOf(view, target);
          if (!next) throw outsideError(path, via);
          await closeAll();
          area = next.area;
          root = await openDirectory(areaHost(view, area));
          queue.unshift(...next.rest);
        } else {
          queue.unshift(...components(target));
        }
        continue;
      }
      if (stats.isDirectory() && !isFinal) {
        stack.push({ fd, name: part });
        continue;
      }
      await closeQuietly(fd);
      if (!isFinal) throw localError("Validation", `a parent of ${path} is not a directory`);
      finalName = part;
    }
    if (missing.length > 0) throw localError("NotFound", `no such file or directory: ${path}`);
    // A path that ended in a directory through `..` or a symlink names that directory: address it through
    // its parent like any other entry.
    if (finalName === undefined && stack.length > 0) {
      const frame = stack.pop()!;
      await closeQuietly(frame.fd);
      finalName = frame.name;
    }
  } catch (error) {
    await closeAll();
    throw error;
  }
  const dir = top();
  const rest = [...stack.map((frame) => frame.name), ...(finalName === undefined ? [] : [finalName])];
  const held = [...stack.map((frame) => frame.fd), root];
  return {
    area,
    rest,
    dir,
    name: finalName,
    path: visiblePath(view, area, rest),
    at: at(dir, finalName),
    close: async () => {
      await Promise.all(held.map((fd) => closeQuietly(fd)));
    },
  };
}

/** Runs `work` with a resolved entry and always lets go of its descriptors. */
export async function withEntry<T>(
  view: SandboxView,
  path: string,
  options: ResolveOptions,
  work: (entry: ResolvedEntry) => Promise<T>,
): Promise<T> {
  const entry = await resolveEntry(view, path, options);
  try {
    return await work(entry);
  } finally {
    await entry.close();
  }
}

/**
 * Opens the final component of `entry` as a pinned directory: `undefined` when it is missing, an error when
 * it is something else (a symlink included: the caller resolved with `followFinal` when it wanted one followed).
 */
export async function openEntryDirectory(entry: ResolvedEntry): Promise<number | undefined> {
  // The area root: reopen the descriptor held (following its /proc link is the point here).
  if (entry.name === undefined) return openFd(at(entry.dir), O_PATH | constants.O_DIRECTORY);
  try {
    return await openFd(entry.at, DIRECTORY_FLAGS);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return undefined;
    throw error;
  }
}
