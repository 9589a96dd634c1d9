import { SandboxError } from "../errors/sandbox-error.js";
import {
  callOptions,
  failure,
  gatedMethod,
  guard,
  invalidInput,
  type SandboxContext,
} from "./sandbox-context.js";
import type { FilesApi } from "./sandbox-types.js";

function validatePath(path: unknown, what = "path"): string {
  if (typeof path !== "string" || path === "") throw invalidInput(`${what} must be a non-empty string`);
  if (path.includes("\0")) throw invalidInput(`${what} must not contain a NUL character`);
  return path;
}

function validateMode(mode: unknown): number | undefined {
  if (mode === undefined) return undefined;
  if (typeof mode !== "number" || !Number.isInteger(mode) || mode < 0 || mode > 0o7777) {
    throw invalidInput("mode must be an integer permission between 0 and 0o7777");
  }
  return mode;
}

/**
 * The files namespace: always present. Each method validates its input and calls the runtime's driver,
 * which is native or emulated per method (`writeMany` is added by the facade) and resolves every path (see `createProviderRuntime`).
 */
export function createFilesApi(context: SandboxContext): Omit<FilesApi, "writeMany"> {
  const { driver } = context.runtime;
  const { handle } = context;
  const read = (path: unknown) => driver.doReadFile(handle, validatePath(path), callOptions());
  return {
    write: (path, data, options = {}) =>
      guard(context, `files.write ${String(path)}`, async () => {
        validatePath(path);
        const mode = validateMode(options.mode);
        if (data instanceof ReadableStream) {
          return driver.doWriteFileStream(handle, path, data, { ...callOptions(), mode });
        }
        if (typeof data !== "string" && !(data instanceof Uint8Array)) {
          throw invalidInput("data must be a string, a Uint8Array or a ReadableStream");
        }
        const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
        await driver.doWriteFile(handle, path, bytes, { ...callOptions(), mode });
      }),
    read: (path) => guard(context, `files.read ${String(path)}`, () => read(path)),
    readText: (path) =>
      guard(context, `files.readText ${String(path)}`, async () =>
        new TextDecoder().decode(await read(path)),
      ),
    readStream: (path) => {
      // The stream is returned at once; the provider is asked on the first read, and its errors arrive there.
      let source: ReadableStreamDefaultReader<Uint8Array> | undefined;
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            source ??= (await driver.doReadFileStream(handle, validatePath(path), callOptions())).getReader();
            const { value, done } = await source.read();
            if (done) controller.close();
            else controller.enqueue(value);
          } catch (error) {
            controller.error(failure(context, error, `files.readStream ${path}`));
          }
        },
        async cancel(reason) {
          await source?.cancel(reason);
        },
      });
    },
    list: (path) =>
      guard(context, `files.list ${String(path)}`, () =>
        driver.doListFiles(handle, validatePath(path), callOptions()),
      ),
    stat: (path) =>
      guard(context, `files.stat ${String(path)}`, () =>
        driver.doStat(handle, validatePath(path), callOptions()),
      ),
    exists: (path) =>
      guard(context, `files.exists ${String(path)}`, async () => {
        try {
          await driver.doStat(handle, validatePath(path), callOptions());
          return true;
        } catch (error) {
          if (SandboxError.isInstance(error) && error.code === "NotFound") return false;
          throw error;
        }
      }),
    mkdir: (path, options = {}) =>
      guard(context, `files.mkdir ${String(path)}`, () =>
        driver.doMkdir(handle, validatePath(path), {
          ...callOptions(),
          recursive: options.recursive ?? false,
        }),
      ),
    remove: (path, options = {}) =>
      guard(context, `files.remove ${String(path)}`, () =>
        driver.doRemove(handle, validatePath(path), {
          ...callOptions(),
          recursive: options.recursive ?? false,
        }),
      ),
    rename: (from, to) =>
      guard(context, `files.rename ${String(from)}`, () =>
        driver.doRename(handle, validatePath(from, "from"), validatePath(to, "to"), callOptions()),
      ),
    watch: (path, onEvent, options = {}) =>
      guard(context, `files.watch ${String(path)}`, async () => {
        const watch = gatedMethod(context, "filesWatch", "doWatch");
        if (typeof onEvent !== "function") throw invalidInput("watch needs an event callback");
        const controller = new AbortController();
        const watcher = await watch(handle, validatePath(path), {
          signal: controller.signal,
          recursive: options.recursive ?? false,
          onEvent,
        });
        return {
          close: async () => {
            controller.abort();
            await watcher.close();
          },
        };
      }),
  };
}
