import { SandboxError } from "../errors/sandbox-error.js";
import type { FilesApi, FileToWrite } from "./sandbox-types.js";

function invalid(message: string): SandboxError {
  return new SandboxError("Validation", message, { retryable: false });
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof (value as { [Symbol.asyncIterator]?: unknown })?.[Symbol.asyncIterator] === "function";
}

function isIterable(value: unknown): value is Iterable<unknown> {
  return (
    typeof value !== "string" &&
    typeof (value as { [Symbol.iterator]?: unknown })?.[Symbol.iterator] === "function"
  );
}

function checkEntry(entry: unknown, index: number): FileToWrite {
  if (typeof entry !== "object" || entry === null)
    throw invalid(`writeMany: file ${index + 1} must be { path, data }`);
  const { path, data } = entry as Partial<FileToWrite>;
  if (typeof path !== "string" || path === "" || path.includes("\0")) {
    throw invalid(`writeMany: file ${index + 1} needs a non-empty path without NUL`);
  }
  if (typeof data !== "string" && !(data instanceof Uint8Array) && !(data instanceof ReadableStream)) {
    throw invalid(`writeMany: ${path}: data must be a string, a Uint8Array or a ReadableStream`);
  }
  return entry as FileToWrite;
}

/**
 * Writes many files with one call, each through `write` (so each is streamed where the provider streams,
 * and creates its parent directories). Entries may come from an array, any iterable, or an async
 * iterable that produces them as it goes; only one file's data is in flight at a time, so memory stays
 * bounded whatever the number and size of the files. Entries of an array are all checked before the
 * first write; a path given twice is a `Validation` error. A failed write stops the call with the error
 * of that file (its code kept), naming the path and how many files were written before it.
 */
export async function writeMany(
  write: FilesApi["write"],
  files: Iterable<FileToWrite> | AsyncIterable<FileToWrite>,
): Promise<void> {
  if (!isIterable(files) && !isAsyncIterable(files)) {
    throw invalid("writeMany takes an array (or iterable) of { path, data, mode? }");
  }
  const seen = new Set<string>();
  const accept = (entry: unknown, index: number): FileToWrite => {
    const file = checkEntry(entry, index);
    if (seen.has(file.path)) throw invalid(`writeMany: ${file.path} is given twice`);
    seen.add(file.path);
    return file;
  };
  // An array is checked whole first, so a bad entry at the end writes nothing.
  const source: Iterable<FileToWrite> | AsyncIterable<FileToWrite> = Array.isArray(files)
    ? files.map(accept)
    : files;
  let written = 0;
  let index = 0;
  for await (const entry of source) {
    const file = Array.isArray(files) ? entry : accept(entry, index);
    index += 1;
    try {
      await write(file.path, file.data, file.mode === undefined ? {} : { mode: file.mode });
    } catch (error) {
      const cause = SandboxError.isInstance(error) ? error : undefined;
      throw new SandboxError(
        cause?.code ?? "Provider",
        `writeMany: writing ${file.path} failed after ${written} file${written === 1 ? "" : "s"} were written: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error, provider: cause?.provider, retryable: false },
      );
    }
    written += 1;
  }
}
