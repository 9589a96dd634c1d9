import type { DaytonaHandle } from "./daytona-lifecycle.js";
import type { ResolvedDaytonaOptions } from "./daytona-options.js";
import { bounded } from "./daytona-sdk.js";

/** Time a transfer may take beyond the request deadline: at least 1 MB/s of the bytes sent. */
function transferAllowanceMs(bytes: number): number {
  return Math.ceil(bytes / 1_000);
}

/**
 * Whether a path survives as a multipart filename: the SDK matches the parts of `/files/bulk-download` by
 * the filename its multipart parser reads (Latin-1, no line breaks), so a path with a quote, backslash, line
 * break or non-ASCII character is read through the single-file route instead.
 */
function multipartSafe(path: string): boolean {
  return /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/.test(path);
}

/** The toolbox's generated client of a sandbox, which the SDK's `FileSystem` keeps for itself. */
interface ToolboxFileApi {
  downloadFile(
    path: string,
    options: { responseType: "arraybuffer"; timeout: number },
  ): Promise<{ data: ArrayBuffer }>;
}

/** `GET /files/download?path=`: the file's bytes as the whole answer (any path, as a query parameter). */
async function downloadOne(handle: DaytonaHandle, path: string): Promise<Buffer> {
  const api = (handle.native.fs as unknown as { apiClient: ToolboxFileApi }).apiClient;
  const response = await api.downloadFile(path, {
    responseType: "arraybuffer",
    timeout: TRANSFER_TIMEOUT_S * 1000,
  });
  return Buffer.from(response.data);
}

/** The longest a whole-file transfer may take once it began (the SDK's own default, 30 minutes). */
const TRANSFER_TIMEOUT_S = 30 * 60;

/**
 * Reads a whole file through the toolbox (`POST /files/bulk-download`, one multipart answer). The answer
 * and its bytes must come within twice the request deadline (a silent service is a Timeout on time). A missing path is the
 * toolbox's 404 (`NotFound`), a directory its 400 (`Validation`).
 */
export async function readDaytonaFile(
  options: ResolvedDaytonaOptions,
  handle: DaytonaHandle,
  path: string,
  signal: AbortSignal,
): Promise<Uint8Array> {
  // One deadline for the answer to begin, one for the bytes (the toolbox answers a whole file at once).
  const bound = 2 * options.requestTimeoutMs;
  const data = multipartSafe(path)
    ? await bounded(handle.native.fs.downloadFile(path, TRANSFER_TIMEOUT_S), signal, bound, "files.read")
    : await bounded(downloadOne(handle, path), signal, bound, "files.read");
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/**
 * Writes a whole file through the toolbox (`POST /files/bulk-upload`, multipart), which creates missing
 * parent directories; a `mode` is then set with `POST /files/permissions`.
 */
export async function writeDaytonaFile(
  options: ResolvedDaytonaOptions,
  handle: DaytonaHandle,
  path: string,
  data: Uint8Array,
  mode: number | undefined,
  signal: AbortSignal,
): Promise<void> {
  const fs = handle.native.fs;
  await bounded(
    fs.uploadFile(Buffer.from(data.buffer, data.byteOffset, data.byteLength), path, TRANSFER_TIMEOUT_S),
    signal,
    options.requestTimeoutMs + transferAllowanceMs(data.byteLength),
    "files.write",
  );
  if (mode !== undefined) {
    await bounded(
      fs.setFilePermissions(path, { mode: (mode & 0o7777).toString(8) }),
      signal,
      options.requestTimeoutMs,
      "files.write",
    );
  }
}
