import { DRIVER_METHOD_NAMES, type DriverMethodName } from "../capabilities/capability-methods.js";
import { abortReasonOf } from "../emulation/e7-timeout.js";
import { redactError } from "../errors/redact-error.js";
import { SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import type { SandboxProviderV1 } from "./provider-spec.js";

/** What each driver method does, as error messages and `mapError` name it. */
const OPERATIONS: { readonly [K in DriverMethodName]-?: string } = {
  doCreate: "create",
  doConnect: "connect",
  doDestroy: "destroy",
  doGetInfo: "getInfo",
  doExec: "exec",
  doExecStream: "exec",
  doSpawn: "commands.spawn",
  doListProcesses: "commands.list",
  doConnectProcess: "commands.connect",
  doKillProcess: "commands.kill",
  doCreatePty: "pty.create",
  doReadFile: "files.read",
  doWriteFile: "files.write",
  doReadFileStream: "files.readStream",
  doWriteFileStream: "files.write",
  doListFiles: "files.list",
  doStat: "files.stat",
  doMkdir: "files.mkdir",
  doRemove: "files.remove",
  doRename: "files.rename",
  doWatch: "files.watch",
  doList: "list",
  doStop: "stop",
  doPause: "pause",
  doResume: "resume",
  doSetTimeout: "setTimeout",
  doMetrics: "metrics",
  doExposePort: "ports.expose",
  doListPorts: "ports.list",
  doUnexposePort: "ports.unexpose",
  doFetchPort: "ports.fetch",
  doSetEgress: "network.setEgress",
  doGetSshAccess: "ssh.access",
  doCreateSnapshot: "snapshots.create",
  doRestoreSnapshot: "snapshots.restore",
  doListSnapshots: "snapshots.list",
  doDeleteSnapshot: "snapshots.delete",
  doFork: "fork",
  doRunCode: "code.run",
  doDispose: "dispose",
};

/** Methods whose second argument is a sandbox path, shown in the operation (`files.read /etc/hosts`). */
const PATH_METHODS: ReadonlySet<DriverMethodName> = new Set([
  "doReadFile",
  "doWriteFile",
  "doReadFileStream",
  "doWriteFileStream",
  "doListFiles",
  "doStat",
  "doMkdir",
  "doRemove",
  "doRename",
  "doWatch",
]);

/** Methods of the handles some driver methods return, whose rejections are mapped too. */
const HANDLE_METHODS: Partial<Record<DriverMethodName, readonly string[]>> = {
  doSpawn: ["wait", "kill", "writeStdin", "closeStdin"],
  doConnectProcess: ["wait", "kill", "writeStdin", "closeStdin"],
  doCreatePty: ["write", "resize", "kill", "wait"],
  doWatch: ["close"],
};

/**
 * Methods whose effect a remote may have carried out before it stopped answering: a `Timeout` of the remote
 * (not of the caller's own deadline) is not retryable there, since a retry could create or run twice.
 */
const NOT_REPEATABLE: ReadonlySet<DriverMethodName> = new Set([
  "doCreate",
  "doExec",
  "doExecStream",
  "doSpawn",
  "doCreatePty",
  "doFork",
  "doRunCode",
  "doCreateSnapshot",
]);

const MAPPED = Symbol.for("sbox.driver-errors-mapped");

type AnyFunction = (...args: unknown[]) => unknown;

/** The call's abort signal: on the last argument that carries one (the options or the request). */
function signalOf(args: readonly unknown[]): AbortSignal | undefined {
  for (let i = args.length - 1; i >= 0; i--) {
    const signal = (args[i] as { signal?: unknown } | null | undefined)?.signal;
    if (signal instanceof AbortSignal) return signal;
  }
  return undefined;
}

/** The native id the call is about: a driver sandbox as first argument, or the id `doConnect` is given. */
function sandboxIdOf(method: DriverMethodName, args: readonly unknown[]): string | undefined {
  const first = args[0];
  if (method === "doConnect") return typeof first === "string" ? first : undefined;
  if (typeof first !== "object" || first === null || !("native" in first)) return undefined;
  const id = (first as { id?: unknown }).id;
  return typeof id === "string" ? id : undefined;
}

function operationOf(method: DriverMethodName, args: readonly unknown[]): string {
  const base = OPERATIONS[method];
  return PATH_METHODS.has(method) && typeof args[1] === "string" ? `${base} ${args[1]}` : base;
}

/**
 * Wraps every driver method of `provider` so that whatever it throws leaves as a `SandboxError`: an abort
 * of the call's signal wins (the signal's reason, else `Aborted`), then the provider's `mapError`, then the
 * core's default mapping; the provider's name is filled in and its secrets are scrubbed. Streams, async
 * iterables and the handles that methods return (processes, terminals, watchers) are covered too. A
 * remote's `Timeout` of a method that may have taken effect (create, exec, spawn, fork...) is made
 * non-retryable.
 * Methods are called on `provider` itself, so class-based providers keep their `this`.
 */
export function withDriverErrorMapping<P extends SandboxProviderV1>(provider: P): P {
  const source = provider as unknown as Record<string, unknown>;
  const result: Record<string, unknown> = { ...source };
  // Declaration fields are read through the provider, so getters of a class-based provider count too.
  for (const key of [
    "specificationVersion",
    "name",
    "capabilities",
    "flags",
    "honours",
    "workdir",
    "emulationStateDir",
    "execStdin",
    "execSignals",
    "secrets",
    "mapError",
  ]) {
    if (source[key] !== undefined) result[key] = source[key];
  }

  const fail = (error: unknown, method: DriverMethodName, args: readonly unknown[]): SandboxError => {
    const operation = operationOf(method, args);
    const signal = signalOf(args);
    let mapped: SandboxError;
    if (SandboxError.isInstance(error)) mapped = error;
    else if (signal?.aborted) mapped = abortReasonOf(signal.reason, operation);
    else
      mapped =
        provider.mapError?.(error, { method, operation, sandboxId: sandboxIdOf(method, args) }) ??
        toSandboxError(error, { provider: provider.name, operation });
    if (mapped.provider === undefined) (mapped as { provider: string | undefined }).provider = provider.name;
    if (mapped.code === "Timeout" && mapped.retryable && !signal?.aborted && NOT_REPEATABLE.has(method)) {
      (mapped as { retryable: boolean }).retryable = false;
    }
    return redactError(mapped, provider.secrets?.() ?? []);
  };

  const settle = (value: unknown, method: DriverMethodName, args: readonly unknown[]): unknown => {
    if (method === "doReadFileStream" && value instanceof ReadableStream) {
      const reader = (value as ReadableStream<Uint8Array>).getReader();
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            const { value: chunk, done } = await reader.read();
            if (done) controller.close();
            else controller.enqueue(chunk);
          } catch (error) {
            controller.error(fail(error, method, args));
          }
        },
        cancel: (reason) => reader.cancel(reason),
      });
    }
    const handleMethods = HANDLE_METHODS[method];
    if (handleMethods && typeof value === "object" && value !== null) {
      const handle = value as Record<string, unknown>;
      const wrapped: Record<string, unknown> = { ...handle };
      for (const name of handleMethods) {
        const fn = handle[name];
        if (typeof fn !== "function") continue;
        wrapped[name] = (...inner: unknown[]) =>
          Promise.resolve()
            .then(() => (fn as AnyFunction).apply(handle, inner))
            .catch((error: unknown) => {
              throw fail(error, method, args);
            });
      }
      if ("pid" in handle) wrapped.pid = handle.pid;
      return wrapped;
    }
    return value;
  };

  for (const method of DRIVER_METHOD_NAMES) {
    const original = source[method];
    if (typeof original !== "function") continue;
    if ((original as { [MAPPED]?: boolean })[MAPPED]) {
      result[method] = original;
      continue;
    }
    let wrapped: AnyFunction;
    if (method === "doList") {
      wrapped = (...args: unknown[]) => ({
        async *[Symbol.asyncIterator]() {
          try {
            yield* (original as AnyFunction).apply(provider, args) as AsyncIterable<unknown>;
          } catch (error) {
            throw fail(error, method, args);
          }
        },
      });
    } else {
      wrapped = async (...args: unknown[]) => {
        try {
          return settle(await (original as AnyFunction).apply(provider, args), method, args);
        } catch (error) {
          throw fail(error, method, args);
        }
      };
    }
    Object.defineProperty(wrapped, MAPPED, { value: true });
    result[method] = wrapped;
  }
  return result as unknown as P;
}
