import { randomBytes } from "node:crypto";
import { posix } from "node:path";
import { Readable } from "node:stream";
import { SandboxError } from "@sbox/core/spec";
import { exec } from "./vercel-commands.js";
import type { VercelDriverSandbox } from "./vercel-lifecycle.js";
import { VERCEL_PROVIDER_NAME } from "./vercel-names.js";

/** `files.read` over `POST .../fs/read`: a missing file is `NotFound` (the SDK answers `null`). */
export async function readFile(
  sandbox: VercelDriverSandbox,
  path: string,
  signal: AbortSignal,
): Promise<Uint8Array> {
  const data = await sandbox.native.readFileToBuffer({ path }, { signal });
  if (data === null) {
    throw new SandboxError("NotFound", `vercel files.read ${path}: no such file`, {
      provider: VERCEL_PROVIDER_NAME,
      retryable: false,
    });
  }
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** `files.write` over `POST .../fs/write` (a gzipped tarball of one file; parents are created). */
export async function writeFile(
  sandbox: VercelDriverSandbox,
  path: string,
  data: Uint8Array,
  mode: number | undefined,
  signal: AbortSignal,
): Promise<void> {
  await sandbox.native.writeFiles([{ path, content: data, ...(mode === undefined ? {} : { mode }) }], {
    signal,
  });
}

/**
 * The most one upload carries. The SDK packs a `writeFiles` call into a gzipped tarball it holds in memory
 * before sending, so a streamed write goes as uploads of this size: memory stays bounded by it, whatever
 * the file's size.
 */
const UPLOAD_CHUNK_BYTES = 8 << 20;

function failure(path: string, what: string, stderr: string): SandboxError {
  const message = stderr.trim();
  return new SandboxError(
    /is a directory|not a directory/i.test(message) ? "Validation" : "Provider",
    `vercel files.write ${path}: ${what}: ${message}`,
    { provider: VERCEL_PROVIDER_NAME, retryable: false },
  );
}

async function run(
  sandbox: VercelDriverSandbox,
  path: string,
  what: string,
  script: string,
  args: string[],
  signal: AbortSignal,
): Promise<void> {
  const result = await exec(sandbox, { command: { argv: ["sh", "-c", script, "sh", ...args] }, signal });
  if (result.exitCode !== 0) throw failure(path, what, String(result.stderr));
}

/** Appends `part` to `file` and removes it. */
const APPEND = 'cat -- "$1" >> "$2" && rm -f -- "$1"';
/**
 * Puts the upload in place: onto an existing file without a new mode its content is copied (the file keeps
 * its permission bits, as a whole write keeps them), otherwise the upload is renamed over. A directory is
 * refused, never written into.
 */
const PUT_IN_PLACE = `if [ -d "$2" ]; then echo "$2: Is a directory" >&2; exit 1; fi
if [ "$3" = keep ] && [ -f "$2" ]; then cat -- "$1" > "$2" && rm -f -- "$1"; else mv -f -- "$1" "$2"; fi`;

/**
 * `files.write` of a stream (`filesUpload`) on the SDK's own tarball upload (`writeFiles`): a file that fits
 * one upload is one `writeFiles`; a larger one goes in uploads of {@link UPLOAD_CHUNK_BYTES}, appended in
 * the sandbox to a hidden file next to the target that replaces it when the stream ends, so a failed or
 * aborted stream leaves the target as it was.
 */
export async function writeFileStream(
  sandbox: VercelDriverSandbox,
  path: string,
  data: ReadableStream<Uint8Array>,
  mode: number | undefined,
  signal: AbortSignal,
): Promise<void> {
  const reader = data.getReader();
  const staged = posix.join(
    posix.dirname(path),
    `.${posix.basename(path)}.sbox-upload-${randomBytes(6).toString("hex")}`,
  );
  let chunks: Uint8Array[] = [];
  let buffered = 0;
  let uploads = 0;
  const take = (): Uint8Array => {
    const out = Buffer.concat(chunks, buffered);
    chunks = [];
    buffered = 0;
    return out;
  };
  const upload = async (bytes: Uint8Array) => {
    if (uploads === 0) {
      await writeFile(sandbox, staged, bytes, mode, signal);
    } else {
      const part = `${staged}.${uploads}`;
      await writeFile(sandbox, part, bytes, undefined, signal);
      await run(sandbox, path, "appending an upload", APPEND, [part, staged], signal);
    }
    uploads++;
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      buffered += value.byteLength;
      while (buffered >= UPLOAD_CHUNK_BYTES) {
        const all = take();
        await upload(all.subarray(0, UPLOAD_CHUNK_BYTES));
        if (all.byteLength > UPLOAD_CHUNK_BYTES) {
          chunks = [all.subarray(UPLOAD_CHUNK_BYTES)];
          buffered = all.byteLength - UPLOAD_CHUNK_BYTES;
        }
      }
    }
    if (uploads === 0) {
      // One upload holds it all: written in place, as a whole write is.
      await writeFile(sandbox, path, take(), mode, signal);
      return;
    }
    if (buffered > 0) await upload(take());
    await run(
      sandbox,
      path,
      "putting the upload in place",
      PUT_IN_PLACE,
      [staged, path, mode === undefined ? "keep" : "replace"],
      signal,
    );
  } catch (error) {
    await reader.cancel().catch(() => undefined);
    if (uploads > 0) {
      await exec(sandbox, {
        command: { argv: ["sh", "-c", 'rm -f -- "$1" "$1".*', "sh", staged] },
        signal: AbortSignal.timeout(30_000),
      }).catch(() => undefined);
    }
    throw error;
  }
}

/** `files.readStream` (`filesUpload`): the body of `POST .../fs/read` as it arrives; a missing file is `NotFound`. */
export async function readFileStream(
  sandbox: VercelDriverSandbox,
  path: string,
  signal: AbortSignal,
): Promise<ReadableStream<Uint8Array>> {
  const stream = await sandbox.native.readFile({ path }, { signal });
  if (stream === null) {
    throw new SandboxError("NotFound", `vercel files.readStream ${path}: no such file`, {
      provider: VERCEL_PROVIDER_NAME,
      retryable: false,
    });
  }
  const readable = stream instanceof Readable ? stream : Readable.from(stream as AsyncIterable<Uint8Array>);
  return Readable.toWeb(readable) as unknown as ReadableStream<Uint8Array>;
}

/**
 * `files.mkdir`: `POST .../fs/mkdir` creates one directory; with `recursive`, `mkdir -p` in the sandbox
 * (the API has no recursive form).
 */
export async function makeDir(
  sandbox: VercelDriverSandbox,
  path: string,
  recursive: boolean,
  signal: AbortSignal,
): Promise<void> {
  if (!recursive) {
    await sandbox.native.mkDir(path, { signal });
    return;
  }
  const result = await exec(sandbox, { command: { argv: ["mkdir", "-p", "--", path] }, signal });
  if (result.exitCode !== 0) {
    throw new SandboxError(
      /not a directory|file exists/i.test(String(result.stderr)) ? "Validation" : "Provider",
      `vercel files.mkdir ${path}: ${String(result.stderr).trim()}`,
      { provider: VERCEL_PROVIDER_NAME, retryable: false },
    );
  }
}
