import { concatBytes } from "../emulation/concat-bytes.js";
import { SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import { driverMethod, guard, requireCapability, type SandboxContext } from "./sandbox-context.js";
import type { FilesApi } from "./sandbox-types.js";

function validatePath(path: unknown, what = "path"): string {
  if (typeof path !== "string" || path === "") {
    throw new SandboxError("Validation", `${what} must be a non-empty string`, { retryable: false });
  }
  if (path.includes("\0"))
    throw new SandboxError("Validation", `${what} must not contain a NUL character`, { retryable: false });
  return path;
}

function validateMode(mode: unknown): number | undefined {
  if (mode === undefined) return undefined;
  if (typeof mode !== "number" || !Number.isInteger(mode) || mode < 0 || mode > 0o7777) {
    throw new SandboxError("Validation", "mode must be an integer permission between 0 and 0o7777", {
      retryable: false,
    });
  }
  return mode;
}

/** Reads a whole stream into one buffer (only for providers with no streamed upload at all). */
async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
  return concatBytes(chunks);
}

/** The files namespace: always present, native or emulated per method (`writeMany` is added by the facade). */
export function createFilesApi(context: SandboxContext): Omit<FilesApi, "writeMany"> {
  const { driver } = context.runtime;
  const none = () => ({ signal: new AbortController().signal });
  return {
    write: (path, data, options = {}) =>
      guard(context, `files.write ${String(path)}`, async () => {
        validatePath(path);
        const mode = validateMode(options.mode);
        if (data instanceof ReadableStream) {
          if (driver.doWriteFileStream) {
            return driver.doWriteFileStream(context.handle, path, data, { ...none(), mode });
          }
          // No streamed upload at all: the data has to pass through memory once.
          data = await collect(data);
        }
        if (typeof data !== "string" && !(data instanceof Uint8Array)) {
          throw new SandboxError("Validation", "data must be a string, a Uint8Array or a ReadableStream", {
            retryable: false,
          });
        }
        const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
        await driverMethod(context, driver.doWriteFile, "files.write")(context.handle, path, bytes, {
          ...none(),
          mode,
        });
      }),
    read: (path) =>
      guard(context, `files.read ${String(path)}`, async () =>
        driverMethod(context, driver.doReadFile, "files.read")(context.handle, validatePath(path), none()),
      ),
    readText: (path) =>
      guard(context, `files.readText ${String(path)}`, async () => {
        const bytes = await driverMethod(context, driver.doReadFile, "files.read")(
          context.handle,
          validatePath(path),
          none(),
        );
        return new TextDecoder().decode(bytes);
      }),
    readStream: (path) => {
      // The stream is returned at once; the provider is asked on the first read, and its errors arrive there.
      let source: ReadableStreamDefaultReader<Uint8Array> | undefined;
      const fail = (error: unknown) => {
        const wrapped = toSandboxError(error, {
          provider: context.runtime.name,
          operation: `files.readStream ${path}`,
        });
        context.reportError(wrapped, "files.readStream");
        return wrapped;
      };
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            if (!source) {
              validatePath(path);
              const stream = driver.doReadFileStream
                ? await driver.doReadFileStream(context.handle, path, none())
                : new ReadableStream<Uint8Array>({
                    async start(inner) {
                      inner.enqueue(
                        await driverMethod(context, driver.doReadFile, "files.read")(
                          context.handle,
                          path,
                          none(),
                        ),
                      );
                      inner.close();
                    },
                  });
              source = stream.getReader();
            }
            const { value, done } = await source.read();
            if (done) controller.close();
            else controller.enqueue(value);
          } catch (error) {
            controller.error(fail(error));
          }
        },
        async cancel(reason) {
          await source?.cancel(reason);
        },
      });
    },
    list: (path) =>
      guard(context, `files.list ${String(path)}`, async () =>
        driverMethod(context, driver.doListFiles, "files.list")(context.handle, validatePath(path), none()),
      ),
    stat: (path) =>
      guard(context, `files.stat ${String(path)}`, async () =>
        driverMethod(context, driver.doStat, "files.stat")(context.handle, validatePath(path), none()),
      ),
    exists: (path) =>
      guard(context, `files.exists ${String(path)}`, async () => {
        try {
          await driverMethod(context, driver.doStat, "files.stat")(
            context.handle,
            validatePath(path),
            none(),
          );
          return true;
        } catch (error) {
          if (SandboxError.isInstance(error) && error.code === "NotFound") return false;
          throw error;
        }
      }),
    mkdir: (path, options = {}) =>
      guard(context, `files.mkdir ${String(path)}`, async () =>
        driverMethod(context, driver.doMkdir, "files.mkdir")(context.handle, validatePath(path), {
          ...none(),
          recursive: options.recursive ?? false,
        }),
      ),
    remove: (path, options = {}) =>
      guard(context, `files.remove ${String(path)}`, async () =>
        driverMethod(context, driver.doRemove, "files.remove")(context.handle, validatePath(path), {
          ...none(),
          recursive: options.recursive ?? false,
        }),
      ),
    rename: (from, to) =>
      guard(context, `files.rename ${String(from)}`, async () =>
        driverMethod(context, driver.doRename, "files.rename")(
          context.handle,
          validatePath(from, "from"),
          validatePath(to, "to"),
          none(),
        ),
      ),
    watch: (path, onEvent, options = {}) =>
      guard(context, `files.watch ${String(path)}`, async () => {
        requireCapability(context, "filesWatch");
        if (typeof onEvent !== "function") {
          throw new SandboxError("Validation", "watch needs an event callback", { retryable: false });
        }
        const controller = new AbortController();
        const watcher = await driverMethod(context, driver.doWatch, "filesWatch")(
          context.handle,
          validatePath(path),
          {
            signal: controller.signal,
            recursive: options.recursive ?? false,
            onEvent,
          },
        );
        return {
          close: async () => {
            controller.abort();
            await watcher.close();
          },
        };
      }),
  };
}
