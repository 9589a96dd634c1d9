import { constants, type Stats } from "node:fs";
import {
  chmod,
  chown,
  copyFile,
  lchown,
  lstat,
  lutimes,
  mkdir,
  readdir,
  readlink,
  rmdir,
  symlink,
  unlink,
  utimes,
} from "node:fs/promises";
import { at, closeQuietly, DIRECTORY_FLAGS, fstatFd, O_PATH, openFd } from "./local-fd-paths.js";

/** Who the copies belong to: kept as created by this process when undefined. */
export type TreeOwner = { readonly uid: number; readonly gid: number } | undefined;

function errnoOf(error: unknown): string | undefined {
  return (error as { code?: string }).code;
}

/** Opens `name` inside `dir` as a pinned directory, or `undefined` when it is not one (any more). */
async function openChildDirectory(dir: number, name: string): Promise<number | undefined> {
  try {
    return await openFd(at(dir, name), DIRECTORY_FLAGS);
  } catch (error) {
    const code = errnoOf(error);
    if (code === "ENOTDIR" || code === "ELOOP" || code === "ENOENT") return undefined;
    throw error;
  }
}

/** The names in the directory open as `dir`; one the sandbox made unreadable is made readable first. */
async function namesIn(dir: number): Promise<string[]> {
  try {
    return await readdir(at(dir));
  } catch (error) {
    const code = errnoOf(error);
    if (code !== "EACCES" && code !== "EPERM") throw error;
    await chmod(at(dir), 0o700);
    return readdir(at(dir));
  }
}

/**
 * Removes `name` inside the directory open as `dir`, with everything below it, never following a symlink: each
 * directory is opened relative to its parent's descriptor with `O_NOFOLLOW`, and an entry that turns into
 * something else while it is being removed is removed as what it became.
 */
export async function removeEntryTree(dir: number, name: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const child = await openChildDirectory(dir, name);
    if (child === undefined) {
      try {
        await unlink(at(dir, name));
        return;
      } catch (error) {
        const code = errnoOf(error);
        if (code === "ENOENT") return;
        if (code !== "EISDIR" || attempt >= 3) throw error; // became a directory meanwhile
        continue;
      }
    }
    try {
      await emptyDirectory(child);
    } finally {
      await closeQuietly(child);
    }
    try {
      await rmdir(at(dir, name));
      return;
    } catch (error) {
      const code = errnoOf(error);
      if (code === "ENOENT") return;
      // Something was created inside while it was being emptied, or it became a file: go again.
      if ((code !== "ENOTEMPTY" && code !== "EEXIST" && code !== "ENOTDIR") || attempt >= 3) throw error;
    }
  }
}

/** Removes everything inside the directory open as `dir`, keeping the directory (and every mount of it). */
export async function emptyDirectory(dir: number): Promise<void> {
  for (const name of await namesIn(dir)) await removeEntryTree(dir, name);
}

async function copyAttributes(path: string, stats: Stats, owner: TreeOwner, link: boolean): Promise<void> {
  if (link) {
    if (owner) await lchown(path, owner.uid, owner.gid);
    await lutimes(path, stats.atime, stats.mtime);
    return;
  }
  if (owner) await chown(path, owner.uid, owner.gid);
  await chmod(path, stats.mode & 0o7777);
  await utimes(path, stats.atime, stats.mtime);
}

/**
 * Copies the content of the directory open as `from` into the directory open as `to`: regular files,
 * directories and symlinks (copied as links, never followed); sockets, FIFOs and devices are skipped.
 * Modes and timestamps are kept; with `owner`, every copy is handed to it. Reads and writes go through
 * descriptors: a file is opened with `O_NOFOLLOW` and checked to be a regular file before its bytes are
 * copied from that very descriptor, and every copy is created with `O_EXCL`, so neither side can be
 * redirected by a symlink swapped in meanwhile.
 */
export async function copyDirectoryContent(from: number, to: number, owner: TreeOwner): Promise<void> {
  for (const name of await namesIn(from)) {
    let stats: Stats;
    try {
      stats = await lstat(at(from, name));
    } catch (error) {
      if (errnoOf(error) === "ENOENT") continue; // removed meanwhile
      throw error;
    }
    if (stats.isSymbolicLink()) {
      const target = await readlink(at(from, name));
      await symlink(target, at(to, name));
      await copyAttributes(at(to, name), stats, owner, true);
    } else if (stats.isDirectory()) {
      const source = await openChildDirectory(from, name);
      if (source === undefined) continue; // no longer a directory
      try {
        await mkdir(at(to, name), 0o700);
        const target = await openFd(at(to, name), DIRECTORY_FLAGS);
        try {
          await copyDirectoryContent(source, target, owner);
          await copyAttributes(at(target), await fstatFd(source), owner, false);
        } finally {
          await closeQuietly(target);
        }
      } finally {
        await closeQuietly(source);
      }
    } else if (stats.isFile()) {
      await copyRegularFile(from, name, to, owner);
    }
  }
}

async function copyRegularFile(from: number, name: string, to: number, owner: TreeOwner): Promise<void> {
  let source: number;
  try {
    source = await openFd(at(from, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = errnoOf(error);
    if (code === "ENOENT" || code === "ELOOP" || code === "ENXIO") return; // changed meanwhile
    throw error;
  }
  try {
    const stats = await fstatFd(source);
    if (!stats.isFile()) return;
    // The descriptor's /proc link reopens exactly the file checked above; EXCL refuses anything already there.
    await copyFile(at(source), at(to, name), constants.COPYFILE_EXCL);
    // Attributes go to the copy through a descriptor of it: its name may already point elsewhere.
    const copy = await openFd(at(to, name), O_PATH | constants.O_NOFOLLOW);
    try {
      if ((await fstatFd(copy)).isFile()) await copyAttributes(at(copy), stats, owner, false);
    } finally {
      await closeQuietly(copy);
    }
  } finally {
    await closeQuietly(source);
  }
}
