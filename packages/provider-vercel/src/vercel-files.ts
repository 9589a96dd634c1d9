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
