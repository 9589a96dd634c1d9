import { SandboxError } from "../errors/sandbox-error.js";
import type { DriverSandbox } from "../spec/provider-spec.js";
import { concatBytes } from "./concat-bytes.js";
import type { EmulationContext } from "./emulation-context.js";
import { feedTo, type Payload, STDIN_PAYLOAD_BYTES } from "./exec-payload.js";
import { shellQuote } from "./shell-quote.js";

/**
 * Raw bytes per command line when bytes travel as base64 text: 36 KiB become 48 KiB of base64, which
 * leaves room for the path and the wrapping well under `MAX_COMMAND_LINE_BYTES`.
 */
export const BASE64_CHUNK_BYTES: number = 36 * 1024;

/** What an upload reads from: bytes in memory, or a stream read piece by piece. */
export type UploadSource = Uint8Array | ReadableStream<Uint8Array>;

/** Options of {@link appendBytes} and {@link uploadToFile}. */
export interface UploadOptions {
  readonly signal: AbortSignal;
  /** What the bytes are for, in error messages ("stdin of the command"). */
  readonly what: string;
}

/**
 * A shell command that appends the bytes to `target` (a shell word, already quoted): `cat` reading stdin
 * when the exec primitive takes stdin (base64 decoded first when it takes text only), else `base64 -d` of
 * inline text. All forms work with busybox.
 */
export function appendCommand(ctx: EmulationContext, target: string, chunk: Uint8Array): Payload {
  if (ctx.execStdin === "none" && chunk.length > BASE64_CHUNK_BYTES) {
    throw new SandboxError("Validation", `a base64 chunk may carry at most ${BASE64_CHUNK_BYTES} bytes`, {
      retryable: false,
    });
  }
  return feedTo(ctx, `cat >> ${target}`, chunk);
}

/** The largest piece {@link appendCommand} accepts in one exec for this context. */
export function chunkBytesFor(ctx: EmulationContext): number {
  return ctx.execStdin === "none" ? BASE64_CHUNK_BYTES : STDIN_PAYLOAD_BYTES;
}

/**
 * Runs one append command with `prelude` (e.g. `mkdir -p`) in front of it and fails with a `Provider` error
 * naming `what` when the shell reports a failure.
 */
async function runAppend(
  ctx: EmulationContext,
  sandbox: DriverSandbox,
  prelude: string,
  target: string,
  chunk: Uint8Array,
  options: UploadOptions,
): Promise<void> {
  const { script, stdin } = appendCommand(ctx, target, chunk);
  const result = await ctx.exec(sandbox, `${prelude}${script}`, {
    signal: options.signal,
    ...(stdin === undefined ? {} : { stdin }),
  });
  if (result.exitCode !== 0) {
    throw new SandboxError(
      "Provider",
      `writing ${options.what} failed (exit ${result.exitCode}): ${new TextDecoder().decode(result.stderr).trim()}`,
      { provider: ctx.provider },
    );
  }
}

/**
 * Writes `source` into the sandbox file `path` (created or truncated, parent directories created), in
 * pieces so that no command line exceeds `MAX_COMMAND_LINE_BYTES`. A stream is read piece by piece and
 * never held whole in memory.
 */
export async function uploadToFile(
  ctx: EmulationContext,
  sandbox: DriverSandbox,
  path: string,
  source: UploadSource,
  options: UploadOptions,
): Promise<void> {
  const target = shellQuote(path);
  const dir = shellQuote(path.replace(/\/[^/]*$/, "") || "/");
  const limit = chunkBytesFor(ctx);
  let first = true;
  const send = async (chunk: Uint8Array): Promise<void> => {
    const prelude = first ? `mkdir -p ${dir} && : > ${target} && ` : "";
    first = false;
    await runAppend(ctx, sandbox, prelude, target, chunk, options);
  };
  for await (const piece of pieces(source, limit)) await send(piece);
  if (first) await send(new Uint8Array(0));
}

/** Cuts a source into pieces of at most `limit` bytes, filling each piece as far as the source allows. */
export async function* pieces(source: UploadSource, limit: number): AsyncGenerator<Uint8Array> {
  if (source instanceof Uint8Array) {
    for (let offset = 0; offset < source.length; offset += limit)
      yield source.subarray(offset, offset + limit);
    return;
  }
  const reader = source.getReader();
  let parts: Uint8Array[] = [];
  let size = 0;
  let done = false;
  try {
    while (!done) {
      const next = await reader.read();
      done = next.done;
      if (next.value !== undefined) {
        if (!(next.value instanceof Uint8Array)) {
          throw new SandboxError("Validation", "a byte stream must yield Uint8Array chunks", {
            retryable: false,
          });
        }
        parts.push(next.value);
        size += next.value.length;
      }
      while (size >= limit || (done && size > 0)) {
        const all = concatBytes(parts);
        const piece = all.subarray(0, Math.min(limit, size));
        parts = piece.length < size ? [all.subarray(piece.length)] : [];
        size -= piece.length;
        yield piece;
      }
    }
  } finally {
    if (!done) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
