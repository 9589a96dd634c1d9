import type { Writable } from "node:stream";

/** Resolves when `stream` can take more data, or when it will never take any (closed, failed). */
function drained(stream: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off("drain", done);
      stream.off("close", done);
      stream.off("error", done);
      resolve();
    };
    stream.on("drain", done);
    stream.on("close", done);
    stream.on("error", done);
  });
}

/**
 * Feeds a command's stdin, then closes it: nothing (immediate EOF), bytes, or a stream copied with
 * backpressure. A command that exits without reading is not an error (EPIPE is ignored).
 */
export async function feedStdin(
  stdin: Writable,
  data: Uint8Array | ReadableStream<Uint8Array> | undefined,
  signal: AbortSignal,
): Promise<void> {
  stdin.on("error", () => {});
  if (data === undefined) {
    stdin.end();
    return;
  }
  if (data instanceof Uint8Array) {
    stdin.end(data);
    return;
  }
  const reader = data.getReader();
  try {
    while (!signal.aborted && !stdin.destroyed) {
      const { done, value } = await reader.read();
      if (done) break;
      if (value && value.byteLength > 0 && !stdin.write(value)) await drained(stdin);
    }
  } finally {
    reader.releaseLock();
    stdin.end();
  }
}
