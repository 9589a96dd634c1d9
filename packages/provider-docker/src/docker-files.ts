import type { IncomingMessage } from "node:http";
import { posix } from "node:path";
import { Readable } from "node:stream";
import { type FileInfo, type FileType, resolveSandboxPath, SandboxError } from "@sbox/core/spec";
import type Dockerode from "dockerode";
import type { DockerEngine } from "./docker-engine.js";
import { runExec, runHelper } from "./docker-exec.js";
import { TAR_END, TarFirstEntryReader, tarFileHeader, tarPadding } from "./docker-tar.js";

/** What the archive API reports about a path (`X-Docker-Container-Path-Stat`). */
interface PathStat {
  name: string;
  size: number;
  /** Go `os.FileMode` bits. */
  mode: number;
  mtime: string;
  linkTarget: string;
}

const GO_MODE_DIR = 2 ** 31;
const GO_MODE_SYMLINK = 2 ** 27;
const MAX_SYMLINK_HOPS = 16;

function hasBit(mode: number, bit: number): boolean {
  return Math.floor(mode / bit) % 2 === 1;
}

function typeOf(mode: number): FileType {
  if (hasBit(mode, GO_MODE_DIR)) return "dir";
  if (hasBit(mode, GO_MODE_SYMLINK)) return "symlink";
  // device, named pipe, socket, char device
  if ([2 ** 26, 2 ** 25, 2 ** 24, 2 ** 21].some((bit) => hasBit(mode, bit))) return "other";
  return "file";
}

function permissionBits(mode: number): number {
  // Go keeps setuid/setgid/sticky in high bits; map them back to their POSIX places.
  let bits = mode % 0o1000;
  if (hasBit(mode, 2 ** 23)) bits += 0o4000;
  if (hasBit(mode, 2 ** 22)) bits += 0o2000;
  if (hasBit(mode, 2 ** 20)) bits += 0o1000;
  return bits;
}

function decodeStat(header: string | string[] | undefined, path: string): PathStat {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) throw new SandboxError("Provider", `docker files: no stat for ${path}`, { retryable: false });
  return JSON.parse(Buffer.from(value, "base64").toString("utf8")) as PathStat;
}

function notFound(path: string, cause: unknown): Error {
  return new SandboxError("NotFound", `no such file or directory: ${path}`, { status: 404, cause });
}

function isCode(error: unknown, code: string): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === code;
}

/** lstat through the archive API (HEAD): symlinks are reported as symlinks. */
async function statPath(
  engine: DockerEngine,
  container: Dockerode.Container,
  path: string,
  signal: AbortSignal,
): Promise<PathStat> {
  try {
    const response = (await engine.call("files.stat", signal, (_docker, bound) =>
      container.infoArchive({ path, abortSignal: bound }),
    )) as unknown as IncomingMessage;
    response.resume();
    return decodeStat(response.headers["x-docker-container-path-stat"], path);
  } catch (error) {
    if (isCode(error, "NotFound")) throw notFound(path, error);
    // HEAD answers carry no body: ask again with GET to learn what the 500 was about.
    if ((error as { status?: unknown }).status === 500) return statByGet(engine, container, path, signal);
    throw error;
  }
}

async function statByGet(
  engine: DockerEngine,
  container: Dockerode.Container,
  path: string,
  signal: AbortSignal,
): Promise<PathStat> {
  try {
    const response = (await engine.call("files.stat", signal, (_docker, bound) =>
      container.getArchive({ path, abortSignal: bound }),
    )) as unknown as IncomingMessage;
    response.destroy();
    return decodeStat(response.headers["x-docker-container-path-stat"], path);
  } catch (error) {
    if (isCode(error, "NotFound")) throw notFound(path, error);
    // A path through a regular file ("/etc/passwd/x") answers 500 "not a directory": it does not exist.
    if (isCode(error, "Validation") && /not a directory/i.test(String((error as Error).message)))
      throw notFound(path, error);
    throw error;
  }
}

/** `files.stat` over the archive API. */
export async function statFile(
  engine: DockerEngine,
  container: Dockerode.Container,
  path: string,
  signal: AbortSignal,
): Promise<FileInfo> {
  const stat = await statPath(engine, container, path, signal);
  const mtime = new Date(stat.mtime);
  const info: FileInfo = {
    name: posix.basename(path) || "/",
    path,
    type: typeOf(stat.mode),
    size: stat.size,
    mode: permissionBits(stat.mode),
  };
  if (!Number.isNaN(mtime.getTime())) info.mtime = mtime;
  return info;
}

/** Opens a file for reading (following symlinks), returning its size and a reader positioned at its body. */
async function openFile(
  engine: DockerEngine,
  container: Dockerode.Container,
  path: string,
  signal: AbortSignal,
): Promise<{ reader: TarFirstEntryReader; size: number; response: IncomingMessage }> {
  let current = path;
  for (let hop = 0; hop <= MAX_SYMLINK_HOPS; hop++) {
    let response: IncomingMessage;
    try {
      response = (await engine.call("files.read", signal, (_docker, bound) =>
        container.getArchive({ path: current, abortSignal: bound }),
      )) as unknown as IncomingMessage;
    } catch (error) {
      if (isCode(error, "NotFound")) throw notFound(path, error);
      if (isCode(error, "Validation") && /not a directory/i.test(String((error as Error).message)))
        throw notFound(path, error);
      throw error;
    }
    const stat = decodeStat(response.headers["x-docker-container-path-stat"], current);
    const type = typeOf(stat.mode);
    if (type === "symlink") {
      response.destroy();
      current = resolveSandboxPath(stat.linkTarget, posix.dirname(current));
      continue;
    }
    if (type !== "file") {
      response.destroy();
      throw new SandboxError(
        "Validation",
        `not a regular file: ${path} is a ${type === "dir" ? "directory" : type}`,
      );
    }
    const reader = new TarFirstEntryReader(response as AsyncIterable<Buffer>);
    const entry = await reader.header();
    if (!entry) {
      response.destroy();
      throw new SandboxError("Provider", `docker files.read: empty archive for ${path}`, {
        retryable: true,
      });
    }
    return { reader, size: entry.size, response };
  }
  throw new SandboxError("Validation", `too many levels of symbolic links: ${path}`);
}

/** `files.read` over the archive API, into one buffer of the file's size. */
export async function readFile(
  engine: DockerEngine,
  container: Dockerode.Container,
  path: string,
  signal: AbortSignal,
): Promise<Uint8Array> {
  const { reader, size, response } = await openFile(engine, container, path, signal);
  const onAbort = () => response.destroy();
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    const out = Buffer.allocUnsafe(size);
    let offset = 0;
    for await (const chunk of reader.body()) {
      chunk.copy(out, offset);
      offset += chunk.length;
    }
    if (offset !== size) throw new Error(`short read: ${offset} of ${size} bytes`);
    response.destroy();
    return new Uint8Array(out.buffer, out.byteOffset, out.length);
  } catch (error) {
    response.destroy();
    if (signal.aborted)
      throw new SandboxError("Aborted", `docker files.read ${path}: aborted`, { cause: error });
    throw new SandboxError("Provider", `docker files.read ${path}: ${(error as Error).message}`, {
      cause: error,
      retryable: true,
    });
  }
}

/** `files.readStream` over the archive API: bytes flow as the engine sends them, with backpressure. */
export async function readFileStream(
  engine: DockerEngine,
  container: Dockerode.Container,
  path: string,
  signal: AbortSignal,
): Promise<ReadableStream<Uint8Array>> {
  const { reader, response } = await openFile(engine, container, path, signal);
  const body = reader.body();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await body.next();
        if (next.done) {
          response.destroy();
          controller.close();
        } else {
          controller.enqueue(new Uint8Array(next.value.buffer, next.value.byteOffset, next.value.length));
        }
      } catch (error) {
        response.destroy();
        controller.error(
          new SandboxError("Provider", `docker files.readStream ${path}: ${(error as Error).message}`, {
            cause: error,
            retryable: true,
          }),
        );
      }
    },
    cancel() {
      response.destroy();
    },
  });
}

async function putOnce(
  engine: DockerEngine,
  container: Dockerode.Container,
  dir: string,
  name: string,
  data: Uint8Array,
  mode: number,
  signal: AbortSignal,
): Promise<void> {
  const parts = [tarFileHeader(name, data.length, mode), data, tarPadding(data.length), TAR_END];
  await engine.call("files.write", signal, (_docker, bound) =>
    container.putArchive(Readable.from(parts, { objectMode: false }), {
      path: dir,
      noOverwriteDirNonDir: true,
      copyUIDGID: true,
      abortSignal: bound,
    }),
  );
}

/**
 * `files.write` over the archive API: one tar entry streamed from the buffer. Parent directories are
 * created (one `mkdir -p` exec) only when the engine says they are missing; an existing file keeps its
 * permission bits unless `mode` is given.
 */
export async function writeFile(
  engine: DockerEngine,
  container: Dockerode.Container,
  path: string,
  data: Uint8Array,
  mode: number | undefined,
  signal: AbortSignal,
): Promise<void> {
  const dir = posix.dirname(path);
  const name = posix.basename(path);
  if (name === "" || path === "/") throw new SandboxError("Validation", `cannot write a file at ${path}`);
  let fileMode = mode;
  if (fileMode === undefined) {
    fileMode = 0o644;
    try {
      const existing = await statPath(engine, container, path, signal);
      if (typeOf(existing.mode) === "dir") {
        throw new SandboxError("Validation", `cannot write ${path}: it is a directory`);
      }
      if (typeOf(existing.mode) === "file") fileMode = permissionBits(existing.mode);
    } catch (error) {
      if (!isCode(error, "NotFound")) throw error;
    }
  }
  try {
    await putOnce(engine, container, dir, name, data, fileMode, signal);
  } catch (error) {
    if (!isCode(error, "NotFound")) throw error;
    const made = await runHelper(engine, container, ["mkdir", "-p", "--", dir], signal, "files.write mkdir");
    if (made.exitCode !== 0) throw helperError("files.write", path, made.stderr.toString("utf8"));
    await putOnce(engine, container, dir, name, data, fileMode, signal);
  }
}

/** Maps a failed helper command's stderr onto the taxonomy. */
function helperError(operation: string, path: string, stderr: string): Error {
  const text = stderr.trim().slice(0, 500);
  const message = `docker ${operation} ${path}: ${text || "failed"}`;
  if (/no such file|not found|not a directory/i.test(text)) return new SandboxError("NotFound", message);
  if (/is a directory/i.test(text)) return new SandboxError("Validation", message);
  if (/permission denied|read-only/i.test(text)) return new SandboxError("Unauthorized", message);
  if (/no space left/i.test(text)) return new SandboxError("QuotaExceeded", message, { retryable: false });
  return new SandboxError("Provider", message, { retryable: false });
}

const WRITE_STREAM_SCRIPT =
  'd=$(dirname -- "$1") && mkdir -p -- "$d" && cat > "$1" && if [ -n "$2" ]; then chmod "$2" "$1"; fi';

/**
 * `files.write` of a stream of unknown length. A tar header needs the size before the body, so instead of
 * spooling the stream somewhere, the bytes go through a hijacked exec's stdin into `cat` (backpressure
 * all the way, memory stays bounded).
 */
export async function writeFileStream(
  engine: DockerEngine,
  container: Dockerode.Container,
  path: string,
  data: ReadableStream<Uint8Array>,
  mode: number | undefined,
  signal: AbortSignal,
): Promise<void> {
  const stderr: Buffer[] = [];
  const exit = await runExec(engine, container, {
    cmd: [
      "sh",
      "-c",
      WRITE_STREAM_SCRIPT,
      "sbox-write",
      path,
      mode === undefined ? "" : (mode & 0o7777).toString(8),
    ],
    stdin: data,
    signal,
    onStdout: () => undefined,
    onStderr: (chunk) => stderr.push(Buffer.from(chunk)),
  });
  if (exit.exitCode !== 0) throw helperError("files.write", path, Buffer.concat(stderr).toString("utf8"));
}
