import { constants, type Stats } from "node:fs";
import { type FileHandle, lstat, mkdir, open, readdir, rename, rm, rmdir, unlink } from "node:fs/promises";
import { type DirEntry, type FileInfo, type FileType, SandboxError } from "@sbox/core/spec";
import { localError, throwIfAborted } from "./local-errors.js";
import {
  assertDescriptorInside,
  childSandboxPath,
  resolveSandboxPath,
  type SandboxView,
} from "./local-paths.js";

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

function parentOf(path: string): string {
  const index = path.lastIndexOf("/");
  return index <= 0 ? "/" : path.slice(0, index);
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
      return localError("Validation", `a parent of ${path} is not a directory`, error);
    case "EEXIST":
      return localError("Conflict", `${path} already exists`, error);
    case "ENOTEMPTY":
      return localError("Conflict", `directory ${path} is not empty (use recursive)`, error);
    case "ELOOP":
      return localError("Validation", `${path} is a symlink that changed while it was being opened`, error);
    case "EACCES":
    case "EPERM":
      return localError("Unauthorized", `permission denied: ${path}`, error);
    case "ENOSPC":
    case "EDQUOT":
      return localError("QuotaExceeded", `no space left for ${path}`, error);
    default:
      return error instanceof Error && "code" in error
        ? localError("Provider", `${path}: ${error.message}`, error)
        : (error as Error);
  }
}

async function openRegularForRead(view: SandboxView, path: string): Promise<FileHandle> {
  const resolved = await resolveSandboxPath(view, path, { followFinal: true });
  let handle: FileHandle;
  try {
    // O_NONBLOCK: opening a FIFO must not hang; O_NOFOLLOW: the last component was resolved already.
    handle = await open(resolved.hostPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw fileError(error, path);
  }
  try {
    await assertDescriptorInside(view, handle.fd, path);
    const stats = await handle.stat();
    if (stats.isDirectory()) throw localError("Validation", `${path} is a directory`);
    if (!stats.isFile()) throw localError("Validation", `${path} is not a regular file`);
    return handle;
  } catch (error) {
    await handle.close().catch(() => {});
    throw error;
  }
}

/** Reads a whole file. */
export async function readSandboxFile(
  view: SandboxView,
  path: string,
  signal: AbortSignal,
): Promise<Uint8Array> {
  throwIfAborted(signal, "files.read");
  const handle = await openRegularForRead(view, path);
  try {
    return new Uint8Array(await handle.readFile({ signal }));
  } finally {
    await handle.close().catch(() => {});
  }
}

/** Streams a file in chunks read on demand, so files larger than memory can be read. */
export async function readSandboxFileStream(
  view: SandboxView,
  path: string,
  signal: AbortSignal,
): Promise<ReadableStream<Uint8Array>> {
  throwIfAborted(signal, "files.readStream");
  const handle = await openRegularForRead(view, path);
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
 * Opens a file for writing (creating parent directories), refusing any path that leads out of the sandbox.
 * The descriptor is checked after opening, so a directory swapped for a symlink in between is caught.
 */
async function openForWrite(view: SandboxView, path: string, mode: number | undefined): Promise<FileHandle> {
  const parent = await resolveSandboxPath(view, parentOf(absolutePathOf(path)), { followFinal: true });
  try {
    await mkdir(parent.hostPath, { recursive: true });
  } catch (error) {
    throw fileError(error, parentOf(absolutePathOf(path)));
  }
  const resolved = await resolveSandboxPath(view, path, { followFinal: true });
  if (resolved.isAreaRoot) throw localError("Validation", `${path} is a directory`);
  let handle: FileHandle;
  try {
    handle = await open(
      resolved.hostPath,
      constants.O_WRONLY |
        constants.O_CREAT |
        constants.O_TRUNC |
        constants.O_NOFOLLOW |
        constants.O_NONBLOCK,
      mode ?? 0o644,
    );
  } catch (error) {
    throw fileError(error, path);
  }
  try {
    await assertDescriptorInside(view, handle.fd, path);
    const stats = await handle.stat();
    if (!stats.isFile()) throw localError("Validation", `${path} is not a regular file`);
    // The umask applied at creation; an explicit mode is meant literally.
    if (mode !== undefined) await handle.chmod(mode);
    return handle;
  } catch (error) {
    await handle.close().catch(() => {});
    throw error;
  }
}

/** Relative paths are taken from `/workspace`. */
function absolutePathOf(path: string): string {
  return path.startsWith("/") ? path : `/workspace/${path}`;
}

/** Writes a whole file, creating parent directories. */
export async function writeSandboxFile(
  view: SandboxView,
  path: string,
  data: Uint8Array,
  options: { signal: AbortSignal; mode?: number | undefined },
): Promise<void> {
  throwIfAborted(options.signal, "files.write");
  const handle = await openForWrite(view, path, options.mode);
  try {
    await handle.writeFile(data);
  } catch (error) {
    throw fileError(error, path);
  } finally {
    await handle.close().catch(() => {});
  }
}

/** Writes a file from a stream chunk by chunk, so it never has to fit in memory. */
export async function writeSandboxFileStream(
  view: SandboxView,
  path: string,
  data: ReadableStream<Uint8Array>,
  options: { signal: AbortSignal; mode?: number | undefined },
): Promise<void> {
  throwIfAborted(options.signal, "files.write");
  const handle = await openForWrite(view, path, options.mode);
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

/** Lists a directory; symlinks are listed as symlinks. */
export async function listSandboxDirectory(
  view: SandboxView,
  path: string,
  signal: AbortSignal,
): Promise<DirEntry[]> {
  throwIfAborted(signal, "files.list");
  const resolved = await resolveSandboxPath(view, path, { followFinal: true });
  let names: string[];
  try {
    names = await readdir(resolved.hostPath);
  } catch (error) {
    throw fileError(error, path);
  }
  const entries = await Promise.all(
    names.sort().map(async (name) => {
      try {
        return infoOf(
          name,
          childSandboxPath(resolved.sandboxPath, name),
          await lstat(`${resolved.hostPath}/${name}`),
        );
      } catch {
        return undefined; // removed while listing
      }
    }),
  );
  return entries.filter((entry): entry is DirEntry => entry !== undefined);
}

/** Describes a path; a symlink is described itself, never followed. */
export async function statSandboxPath(
  view: SandboxView,
  path: string,
  signal: AbortSignal,
): Promise<FileInfo> {
  throwIfAborted(signal, "files.stat");
  const resolved = await resolveSandboxPath(view, path, { followFinal: false });
  try {
    return infoOf(baseName(resolved.sandboxPath), resolved.sandboxPath, await lstat(resolved.hostPath));
  } catch (error) {
    throw fileError(error, path);
  }
}

/** Creates a directory (with its parents when `recursive`). */
export async function makeSandboxDirectory(
  view: SandboxView,
  path: string,
  options: { signal: AbortSignal; recursive: boolean },
): Promise<void> {
  throwIfAborted(options.signal, "files.mkdir");
  const resolved = await resolveSandboxPath(view, path, { followFinal: false });
  try {
    if (options.recursive) {
      await mkdir(resolved.hostPath, { recursive: true });
      const stats = await lstat(resolved.hostPath);
      if (!stats.isDirectory()) throw localError("Conflict", `${path} exists and is not a directory`);
    } else {
      await mkdir(resolved.hostPath);
    }
  } catch (error) {
    throw fileError(error, path);
  }
}

/** Removes a file, a symlink (not its target) or a directory (with its content when `recursive`). */
export async function removeSandboxPath(
  view: SandboxView,
  path: string,
  options: { signal: AbortSignal; recursive: boolean },
): Promise<void> {
  throwIfAborted(options.signal, "files.remove");
  const resolved = await resolveSandboxPath(view, path, { followFinal: false });
  if (resolved.isAreaRoot) throw localError("Validation", `${resolved.sandboxPath} itself cannot be removed`);
  try {
    const stats = await lstat(resolved.hostPath);
    if (!stats.isDirectory()) await unlink(resolved.hostPath);
    else if (options.recursive) await rm(resolved.hostPath, { recursive: true, force: false, maxRetries: 2 });
    else await rmdir(resolved.hostPath);
  } catch (error) {
    throw fileError(error, path);
  }
}

/** Renames within the sandbox (also between `/workspace` and `/tmp`). */
export async function renameSandboxPath(
  view: SandboxView,
  from: string,
  to: string,
  signal: AbortSignal,
): Promise<void> {
  throwIfAborted(signal, "files.rename");
  const source = await resolveSandboxPath(view, from, { followFinal: false });
  const target = await resolveSandboxPath(view, to, { followFinal: false });
  if (source.isAreaRoot || target.isAreaRoot) {
    throw localError("Validation", "/workspace and /tmp themselves cannot be renamed or replaced");
  }
  try {
    await lstat(source.hostPath);
  } catch (error) {
    throw fileError(error, from);
  }
  try {
    await rename(source.hostPath, target.hostPath);
  } catch (error) {
    throw fileError(error, to);
  }
}
