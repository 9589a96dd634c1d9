import { type FileInfo, type FileType, SandboxError, shellQuoteArgv } from "@sbox/core/spec";
import type { EntryInfo } from "e2b";
import { type CommandContext, exec } from "./e2b-commands.js";
import type { E2BDriverSandbox } from "./e2b-lifecycle.js";
import { sandboxCall } from "./e2b-sandbox-call.js";
import { unarySignal } from "./e2b-sdk.js";

/** Per-request options every filesystem call of the SDK takes. */
interface FilesystemRequestOpts {
  signal?: AbortSignal;
  user?: string;
  requestTimeoutMs?: number;
}

/** Options of a unary filesystem call; streamed transfers pass `streamed` (the SDK bounds their idle time). */
function requestOptions(ctx: CommandContext, signal: AbortSignal, streamed = false): FilesystemRequestOpts {
  const opts: FilesystemRequestOpts = { signal: streamed ? signal : unarySignal(ctx.options, signal) };
  if (ctx.options.user !== undefined) opts.user = ctx.options.user;
  if (ctx.options.requestTimeoutMs !== undefined) opts.requestTimeoutMs = ctx.options.requestTimeoutMs;
  return opts;
}

function typeOf(entry: EntryInfo): FileType {
  // envd describes a symlink by its target's type and says it is one through symlinkTarget.
  if (entry.symlinkTarget !== undefined) return "symlink";
  // The SDK leaves the type out for anything but files, directories and symlinks (fifos, sockets, devices).
  return entry.type === "file" || entry.type === "dir" || entry.type === "symlink" ? entry.type : "other";
}

/** An E2B entry as a FileInfo. */
export function fileInfoOf(entry: EntryInfo): FileInfo {
  const info: FileInfo = { name: entry.name, path: entry.path, type: typeOf(entry), size: entry.size };
  if (entry.modifiedTime) info.mtime = entry.modifiedTime;
  if (typeof entry.mode === "number") info.mode = entry.mode;
  return info;
}

function parentOf(path: string): string {
  const trimmed = path.replace(/\/+$/, "");
  const slash = trimmed.lastIndexOf("/");
  if (slash < 0) return ".";
  return slash === 0 ? "/" : trimmed.slice(0, slash);
}

function op(name: string, path: string): string {
  return `files.${name} ${path}`;
}

/** Reads a whole file (`GET /files`). */
export async function readFile(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  path: string,
  signal: AbortSignal,
): Promise<Uint8Array> {
  return sandboxCall(ctx, sandbox.id, op("read", path), signal, () =>
    sandbox.native.files.read(path, { ...requestOptions(ctx, signal), format: "bytes" as const }),
  );
}

/** `chmod` through a command: E2B's upload has no mode. */
async function chmod(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  path: string,
  mode: number,
  signal: AbortSignal,
) {
  if (!(Number.isInteger(mode) && mode >= 0 && mode <= 0o7777)) {
    throw new SandboxError("Validation", `mode must be an integer from 0 to 0o7777, got ${String(mode)}`);
  }
  const result = await exec(ctx, sandbox, {
    command: { shell: shellQuoteArgv(["chmod", mode.toString(8), "--", path]) },
    signal,
  });
  if (result.exitCode !== 0) {
    throw new SandboxError("Provider", `e2b files.write ${path}: chmod failed: ${result.stderr.trim()}`, {
      retryable: false,
    });
  }
}

/** Writes a whole file (`POST /files`, which creates parent directories), then applies `mode`. */
export async function writeFile(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  path: string,
  data: Uint8Array,
  mode: number | undefined,
  signal: AbortSignal,
): Promise<void> {
  const body = data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer;
  await sandboxCall(ctx, sandbox.id, op("write", path), signal, () =>
    sandbox.native.files.write(path, body, requestOptions(ctx, signal)),
  );
  if (mode !== undefined) await chmod(ctx, sandbox, path, mode, signal);
}

/** Streams a file down without holding it in memory; errors while reading are mapped too. */
export async function readFileStream(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  path: string,
  signal: AbortSignal,
): Promise<ReadableStream<Uint8Array>> {
  const source = await sandboxCall(ctx, sandbox.id, op("readStream", path), signal, () =>
    sandbox.native.files.read(path, { ...requestOptions(ctx, signal, true), format: "stream" as const }),
  );
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        controller.error(error);
      }
    },
    async cancel(reason) {
      await reader.cancel(reason);
    },
  });
}

/** Streams a file up as the request body (`application/octet-stream`), then applies `mode`. */
export async function writeFileStream(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  path: string,
  data: ReadableStream<Uint8Array>,
  mode: number | undefined,
  signal: AbortSignal,
): Promise<void> {
  await sandboxCall(
    ctx,
    sandbox.id,
    op("writeStream", path),
    signal,
    () =>
      sandbox.native.files.write(path, data, { ...requestOptions(ctx, signal, true), useOctetStream: true }),
    // The upload lasts as long as the stream does.
    { unbounded: true },
  );
  if (mode !== undefined) await chmod(ctx, sandbox, path, mode, signal);
}

/** envd's ListDir entry as the SDK's Connect client returns it (spec/envd/filesystem/filesystem.proto). */
interface RawEntry {
  name: string;
  type: number;
  path: string;
  size: bigint | number;
  mode: number;
  modifiedTime?: { seconds: bigint | number; nanos: number } | undefined;
  symlinkTarget?: string | undefined;
}

/** The SDK's Connect client of envd's filesystem service (an internal of `e2b`, pinned by version). */
interface RawFilesystemClient {
  listDir(
    request: { path: string; depth: number },
    options: { headers: Record<string, string>; signal: AbortSignal },
  ): Promise<{ entries: RawEntry[] }>;
}

/** envd's FileType: 1 file, 2 directory; anything else (fifo, socket, device, dangling link) is unknown. */
function rawFileInfo(entry: RawEntry): FileInfo {
  const type: FileType =
    entry.symlinkTarget !== undefined
      ? "symlink"
      : entry.type === 1
        ? "file"
        : entry.type === 2
          ? "dir"
          : "other";
  const info: FileInfo = { name: entry.name, path: entry.path, type, size: Number(entry.size) };
  if (entry.modifiedTime) {
    info.mtime = new Date(
      Number(entry.modifiedTime.seconds) * 1000 + Math.floor(entry.modifiedTime.nanos / 1e6),
    );
  }
  info.mode = entry.mode;
  return info;
}

/**
 * Lists one directory level. The SDK's `files.list` drops every entry envd types as unknown — dangling
 * symlinks, fifos, sockets, devices — so the listing asks envd through the SDK's own Connect client and
 * keeps them. Should that client not be there (another SDK version) or the call fail, the SDK's `list`
 * answers instead (it maps envd's errors to the SDK's error classes).
 */
export async function listFiles(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  path: string,
  signal: AbortSignal,
): Promise<FileInfo[]> {
  const client = (sandbox.native.files as unknown as { rpc?: Partial<RawFilesystemClient> }).rpc;
  if (typeof client?.listDir === "function") {
    const user = ctx.options.user;
    const headers: Record<string, string> =
      user === undefined ? {} : { Authorization: `Basic ${Buffer.from(`${user}:`).toString("base64")}` };
    const timeout = ctx.options.requestTimeoutMs ?? 60_000;
    const raw = await client
      .listDir(
        { path, depth: 1 },
        { headers, signal: AbortSignal.any([signal, AbortSignal.timeout(timeout)]) },
      )
      .catch(() => undefined);
    if (raw) return raw.entries.map(rawFileInfo);
  }
  const entries = await sandboxCall(ctx, sandbox.id, op("list", path), signal, () =>
    sandbox.native.files.list(path, { ...requestOptions(ctx, signal), depth: 1 }),
  );
  return entries.map(fileInfoOf);
}

/** Metadata of one path; a symlink is reported as itself. */
export async function statFile(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  path: string,
  signal: AbortSignal,
): Promise<FileInfo> {
  const entry = await sandboxCall(ctx, sandbox.id, op("stat", path), signal, () =>
    sandbox.native.files.getInfo(path, requestOptions(ctx, signal)),
  );
  return fileInfoOf(entry);
}

/**
 * `mkdir`. E2B's MakeDir always creates missing parents and reports an existing directory, so plain mkdir
 * semantics are checked first: without `recursive` a missing parent is NotFound and an existing directory
 * a Conflict.
 */
export async function makeDir(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  path: string,
  recursive: boolean,
  signal: AbortSignal,
): Promise<void> {
  if (!recursive) {
    const parent = await statFile(ctx, sandbox, parentOf(path), signal).catch((error: unknown) => {
      if (SandboxError.isInstance(error) && error.code === "NotFound") {
        throw new SandboxError("NotFound", `e2b files.mkdir ${path}: the parent directory does not exist`, {
          cause: error,
        });
      }
      throw error;
    });
    if (parent.type !== "dir") {
      throw new SandboxError("Validation", `e2b files.mkdir ${path}: the parent is not a directory`);
    }
  }
  const created = await sandboxCall(ctx, sandbox.id, op("mkdir", path), signal, () =>
    sandbox.native.files.makeDir(path, requestOptions(ctx, signal)),
  );
  if (!created && !recursive) {
    throw new SandboxError("Conflict", `e2b files.mkdir ${path}: the directory already exists`);
  }
}

/**
 * `remove`. E2B removes recursively and ignores a missing path, so both are checked first: a missing path is
 * NotFound, and a non-empty directory without `recursive` a Conflict (nothing is removed).
 */
export async function removePath(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  path: string,
  recursive: boolean,
  signal: AbortSignal,
): Promise<void> {
  const info = await statFile(ctx, sandbox, path, signal);
  if (info.type === "dir" && !recursive) {
    const entries = await listFiles(ctx, sandbox, path, signal);
    if (entries.length > 0) {
      throw new SandboxError(
        "Conflict",
        `e2b files.remove ${path}: the directory is not empty (use recursive)`,
      );
    }
  }
  await sandboxCall(ctx, sandbox.id, op("remove", path), signal, () =>
    sandbox.native.files.remove(path, requestOptions(ctx, signal)),
  );
}

/** `rename` (E2B's Move creates the target's parent directories). */
export async function renamePath(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  from: string,
  to: string,
  signal: AbortSignal,
): Promise<void> {
  await sandboxCall(ctx, sandbox.id, op("rename", from), signal, () =>
    sandbox.native.files.rename(from, to, requestOptions(ctx, signal)),
  );
}
