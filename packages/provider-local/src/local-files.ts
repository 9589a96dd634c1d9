import { constants, type Stats } from "node:fs";
import { type FileHandle, lstat, mkdir, open, readdir, rename, rmdir, unlink } from "node:fs/promises";
import { type DirEntry, type FileInfo, type FileType, SandboxError } from "@sbox/core/spec";
import { localError, throwIfAborted } from "./local-errors.js";
import {
  at,
  closeQuietly,
  fstatFd,
  giveDirectoryToSandbox,
  openEntryDirectory,
  type ResolvedEntry,
  withEntry,
} from "./local-fd-paths.js";
import { childSandboxPath, type SandboxView } from "./local-paths.js";
import { removeEntryTree } from "./local-tree.js";

const READ_CHUNK_BYTES = 256 * 1024;

function typeOf(stats: Stats): FileType {
  if (stats.isSymbolicLink()) return "symlink";
  if (stats.isDirectory()) return "dir";
  if (stats.isFile()) return "file";
  return "other";
}

function infoOf(name: string, path: string, stats: Stats): FileInfo {
  return { name, path, type: typeOf(stats), size: stats.size, mtime: stats.mtime, mode: stats.mode & 0o7777 };
}

function baseName(path: string): string {
  const parts = path.split("/");
  return parts[parts.length - 1] || "/";
}

function notFound(path: string, cause?: unknown): Error {
  return localError("NotFound", `no such file or directory: ${path}`, cause);
}

/** Maps the errno of a file operation on `path` to a precise error. */
function fileError(error: unknown, path: string): Error {
  if (SandboxError.isInstance(error)) return error;
  const code = (error as { code?: string }).code;
  switch (code) {
    case "ENOENT":
      return notFound(path, error);
    case "EISDIR":
      return localError("Validation", `${path} is a directory`, error);
    case "ENOTDIR":
      return localError("Validation", `${path} (or a parent of it) is not a directory`, error);
    case "EEXIST":
      return localError("Conflict", `${path} already exists`, error);
    case "ENOTEMPTY":
      return localError("Conflict", `directory ${path} is not empty (use recursive)`, error);
    case "ELOOP":
      return localError("Conflict", `${path} was replaced by a symlink while it was being opened`, error);
    case "ENXIO":
      return localError("Validation", `${path} is not a regular file`, error);
    case "EACCES":
    case "EPERM":
      return localError("Unauthorized", `permission denied: ${path}`, error);
    case "ENOSPC":
    case "EDQUOT":
    case "EFBIG":
      return localError("QuotaExceeded", `no space left for ${path}`, error);
    default:
      return error instanceof Error && "code" in error
        ? localError("Provider", `${path}: ${error.message}`, error)
        : (error as Error);
  }
}

/** Runs a file operation on `path`, mapping what it throws. */
async function guarded<T>(path: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw fileError(error, path);
  }
}

async function openRegularForRead(view: SandboxView, path: string): Promise<FileHandle> {
  return withEntry(view, path, { followFinal: true }, async (entry) => {
    if (entry.name === undefined) throw localError("Validation", `${path} is a directory`);
    // O_NONBLOCK: opening a FIFO must not hang; O_NOFOLLOW: a symlink swapped in since the walk is refused.
    const handle = await open(entry.at, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      const stats = await handle.stat();
      if (stats.isDirectory()) throw localError("Validation", `${path} is a directory`);
      if (!stats.isFile()) throw localError("Validation", `${path} is not a regular file`);
      return handle;
    } catch (error) {
      await handle.close().catch(() => {});
      throw error;
    }
  });
}

/**
 * Reads a whole file into one buffer of its size, filled in place: the bytes are held once, never collected
 * in chunks and copied again. A file that grows while it is read is read to its new end.
 */
export async function readSandboxFile(
  view: SandboxView,
  path: string,
  signal: AbortSignal,
): Promise<Uint8Array> {
  throwIfAborted(signal, "files.read");
  return guarded(path, async () => {
    const handle = await openRegularForRead(view, path);
    try {
      let buffer = new Uint8Array((await handle.stat()).size);
      let length = 0;
      for (;;) {
        throwIfAborted(signal, "files.read");
        if (length === buffer.byteLength) {
          // Full: either the end, or the file grew. A probe read tells which without copying anything yet.
          const probe = new Uint8Array(READ_CHUNK_BYTES);
          const { bytesRead } = await handle.read(probe, 0, probe.byteLength, length);
          if (bytesRead === 0) break;
          const grown = new Uint8Array(Math.max(buffer.byteLength * 2, length + bytesRead));
          grown.set(buffer.subarray(0, length));
          grown.set(probe.subarray(0, bytesRead), length);
          buffer = grown;
          length += bytesRead;
          continue;
        }
        const { bytesRead } = await handle.read(buffer, length, buffer.byteLength - length, length);
        if (bytesRead === 0) break;
        length += bytesRead;
      }
      return length === buffer.byteLength ? buffer : buffer.subarray(0, length);
    } finally {
      await handle.close().catch(() => {});
    }
  });
}

/** Streams a file in chunks read on demand, so files larger than memory can be read. */
export async function readSandboxFileStream(
  view: SandboxView,
  path: string,
  signal: AbortSignal,
): Promise<ReadableStream<Uint8Array>> {
  throwIfAborted(signal, "files.readStream");
  const handle = await guarded(path, () => openRegularForRead(view, path));
  let position = 0;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await handle.close().catch(() => {});
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const buffer = new Uint8Array(READ_CHUNK_BYTES);
          const { bytesRead } = await handle.read(buffer, 0, READ_CHUNK_BYTES, position);
          if (bytesRead === 0) {
            await close();
            controller.close();
            return;
          }
          position += bytesRead;
          controller.enqueue(bytesRead === READ_CHUNK_BYTES ? buffer : buffer.slice(0, bytesRead));
        } catch (error) {
          await close();
          controller.error(fileError(error, path));
        }
      },
      async cancel() {
        await close();
      },
    },
    { highWaterMark: 1 },
  );
}

/**
 * Opens a file for writing, creating missing parent directories, without ever leaving the sandbox: the
 * parents are walked and created relative to descriptors, and the file is opened relative to its parent's
 * descriptor with `O_NOFOLLOW`, so nothing is created or truncated anywhere else.
 */
async function openForWrite(view: SandboxView, path: string, mode: number | undefined): Promise<FileHandle> {
  return withEntry(view, path, { followFinal: true, create: "parents" }, async (entry) => {
    if (entry.name === undefined) throw localError("Validation", `${path} is a directory`);
    const handle = await open(
      entry.at,
      constants.O_WRONLY |
        constants.O_CREAT |
        constants.O_TRUNC |
        constants.O_NOFOLLOW |
        constants.O_NONBLOCK,
      mode ?? 0o644,
    );
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) throw localError("Validation", `${path} is not a regular file`);
      if (view.owner) await handle.chown(view.owner.uid, view.owner.gid);
      // The umask applied at creation; an explicit mode is meant literally.
      if (mode !== undefined) await handle.chmod(mode);
      return handle;
    } catch (error) {
      await handle.close().catch(() => {});
      throw error;
    }
  });
}

/** Writes a whole file, creating parent directories. */
export async function writeSandboxFile(
  view: SandboxView,
  path: string,
  data: Uint8Array,
  options: { signal: AbortSignal; mode?: number | undefined },
): Promise<void> {
  throwIfAborted(options.signal, "files.write");
  await guarded(path, async () => {
    const handle = await openForWrite(view, path, options.mode);
    try {
      await handle.writeFile(data);
    } finally {
      await handle.close().catch(() => {});
    }
  });
}

/** Writes a file from a stream chunk by chunk, so it never has to fit in memory. */
export async function writeSandboxFileStream(
  view: SandboxView,
  path: string,
  data: ReadableStream<Uint8Array>,
  options: { signal: AbortSignal; mode?: number | undefined },
): Promise<void> {
  throwIfAborted(options.signal, "files.write");
  const handle = await guarded(path, () => openForWrite(view, path, options.mode));
  const reader = data.getReader();
  try {
    for (;;) {
      throwIfAborted(options.signal, "files.write");
      const { done, value } = await reader.read();
      if (done) break;
      if (!(value instanceof Uint8Array))
        throw localError("Validation", "a file stream must yield Uint8Array chunks");
      let offset = 0;
      while (offset < value.byteLength) {
        const { bytesWritten } = await handle.write(value, offset, value.byteLength - offset);
        offset += bytesWritten;
      }
    }
  } catch (error) {
    await reader.cancel(error).catch(() => {});
    throw fileError(error, path);
  } finally {
    reader.releaseLock();
    await handle.close().catch(() => {});
  }
}

/** The directory `entry` names, opened; NotFound when it is missing. */
async function openListedDirectory(entry: ResolvedEntry, path: string): Promise<number> {
  const dir = await openEntryDirectory(entry);
  if (dir === undefined) throw notFound(path);
  return dir;
}

/** Lists a directory; symlinks are listed as symlinks. */
export async function listSandboxDirectory(
  view: SandboxView,
  path: string,
  signal: AbortSignal,
): Promise<DirEntry[]> {
  throwIfAborted(signal, "files.list");
  return guarded(path, () =>
    withEntry(view, path, { followFinal: true }, async (entry) => {
      const dir = await openListedDirectory(entry, path);
      try {
        const names = await readdir(at(dir));
        const entries = await Promise.all(
          names.sort().map(async (name) => {
            try {
              return infoOf(name, childSandboxPath(entry.path, name), await lstat(at(dir, name)));
            } catch {
              return undefined; // removed while listing
            }
          }),
        );
        return entries.filter((listed): listed is DirEntry => listed !== undefined);
      } finally {
        await closeQuietly(dir);
      }
    }),
  );
}

/** Describes a path; a symlink is described itself, never followed. */
export async function statSandboxPath(
  view: SandboxView,
  path: string,
  signal: AbortSignal,
): Promise<FileInfo> {
  throwIfAborted(signal, "files.stat");
  return guarded(path, () =>
    withEntry(view, path, { followFinal: false }, async (entry) => {
      // The area root is the held descriptor itself: fstat, since lstat would describe its /proc link.
      const stats = entry.name === undefined ? await fstatFd(entry.dir) : await lstat(entry.at);
      return infoOf(baseName(entry.path), entry.path, stats);
    }),
  );
}

/** Creates a directory (with its parents when `recursive`). */
export async function makeSandboxDirectory(
  view: SandboxView,
  path: string,
  options: { signal: AbortSignal; recursive: boolean },
): Promise<void> {
  throwIfAborted(options.signal, "files.mkdir");
  await guarded(path, async () => {
    if (options.recursive) {
      await withEntry(view, path, { followFinal: true, create: "all" }, async (entry) => {
        const stats = entry.name === undefined ? await fstatFd(entry.dir) : await lstat(entry.at);
        if (!stats.isDirectory()) throw localError("Conflict", `${path} exists and is not a directory`);
      });
      return;
    }
    await withEntry(view, path, { followFinal: false }, async (entry) => {
      if (entry.name === undefined) throw localError("Conflict", `${path} already exists`);
      await mkdir(entry.at, 0o755);
      await giveDirectoryToSandbox(view, entry.dir, entry.name);
    });
  });
}

/** Removes a file, a symlink (not its target) or a directory (with its content when `recursive`). */
export async function removeSandboxPath(
  view: SandboxView,
  path: string,
  options: { signal: AbortSignal; recursive: boolean },
): Promise<void> {
  throwIfAborted(options.signal, "files.remove");
  await guarded(path, () =>
    withEntry(view, path, { followFinal: false }, async (entry) => {
      if (entry.name === undefined) throw localError("Validation", `${entry.path} itself cannot be removed`);
      const stats = await lstat(entry.at);
      if (!stats.isDirectory()) await unlink(entry.at);
      else if (options.recursive) await removeEntryTree(entry.dir, entry.name);
      else await rmdir(entry.at);
    }),
  );
}

/** Renames within the sandbox (also between its areas). */
export async function renameSandboxPath(
  view: SandboxView,
  from: string,
  to: string,
  signal: AbortSignal,
): Promise<void> {
  throwIfAborted(signal, "files.rename");
  await withEntry(view, from, { followFinal: false }, (source) =>
    withEntry(view, to, { followFinal: false }, async (target) => {
      if (source.name === undefined || target.name === undefined) {
        throw localError(
          "Validation",
          "/workspace, /tmp and /home/user themselves cannot be renamed or replaced",
        );
      }
      await guarded(from, () => lstat(source.at));
      await guarded(to, () => rename(source.at, target.at));
    }),
  ).catch((error: unknown) => {
    throw fileError(error, from);
  });
}
