import type { DaytonaHandle } from "./daytona-lifecycle.js";
import type { ResolvedDaytonaOptions } from "./daytona-options.js";
import { bounded } from "./daytona-sdk.js";

/** Time a transfer may take beyond the request deadline: at least 1 MB/s of the bytes sent. */
function transferAllowanceMs(bytes: number): number {
  return Math.ceil(bytes / 1_000);
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
  const data = await bounded(
    handle.native.fs.downloadFile(path, TRANSFER_TIMEOUT_S),
    signal,
    2 * options.requestTimeoutMs,
    "files.read",
  );
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
