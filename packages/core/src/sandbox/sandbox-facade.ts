import type { CapabilityName } from "../capabilities/capability-names.js";
import { EXPIRES_AT_METADATA_KEY } from "../client/validate-spec.js";
import { NotSupportedError, SandboxError } from "../errors/sandbox-error.js";
import type { DriverSandbox, DriverSandboxInfo } from "../spec/provider-spec.js";
import { createCommandsApi } from "./commands-api.js";
import { createFilesApi } from "./files-api.js";
import { writeMany } from "./files-write-many.js";
import { createGatedApis } from "./gated-apis.js";
import type { ProviderRuntime } from "./provider-runtime.js";
import { driverMethod, guard, requireCapability, type SandboxContext } from "./sandbox-context.js";
import type { FilesApi, NamespaceCapability, Sandbox, SandboxInfo } from "./sandbox-types.js";

/** What the client hands a new facade. */
export interface SandboxFacadeOptions {
  readonly runtime: ProviderRuntime;
  readonly handle: DriverSandbox;
  readonly reportError: SandboxContext["reportError"];
  readonly onDestroy: (id: string) => Promise<void>;
}

/** The namespace each gating capability opens, for `can()`. */
const NAMESPACE_OF: Partial<Record<CapabilityName, keyof NamespaceCapability>> = {
  exposePort: "ports",
  snapshot: "snapshots",
  fork: "fork",
  egressControl: "network",
  pty: "pty",
  codeInterpreter: "code",
  ssh: "ssh",
};

/** The full sandbox id: `"<provider>:<native id>"`. */
export function qualifiedId(provider: string, nativeId: string): string {
  return `${provider}:${nativeId}`;
}

/** Turns what a driver reports into the user-facing info, with a core-recorded expiry where there is one. */
export function toSandboxInfo(provider: string, info: DriverSandboxInfo): SandboxInfo {
  const recorded = info.metadata[EXPIRES_AT_METADATA_KEY];
  const expiresAt =
    info.expiresAt ?? (recorded && !Number.isNaN(Date.parse(recorded)) ? new Date(recorded) : undefined);
  const result: SandboxInfo = {
    id: qualifiedId(provider, info.id),
    provider,
    state: info.state,
    metadata: { ...info.metadata },
    raw: info.raw,
  };
  if (info.createdAt) result.createdAt = info.createdAt;
  if (expiresAt) result.expiresAt = expiresAt;
  if (info.partial) result.partial = info.partial;
  return result;
}

/** The files namespace with `writeMany`, which writes through the namespace's own `write`. */
function withWriteMany(context: SandboxContext, files: Omit<FilesApi, "writeMany">): FilesApi {
  return {
    ...files,
    writeMany: (entries) => guard(context, "files.writeMany", () => writeMany(files.write, entries)),
  };
}

function invalid(message: string): SandboxError {
  return new SandboxError("Validation", message, { retryable: false });
}

/** Builds the `Sandbox` facade over one driver sandbox. */
export function createSandboxFacade(options: SandboxFacadeOptions): Sandbox {
  const { runtime, handle } = options;
  const id = qualifiedId(runtime.name, handle.id);
  const context: SandboxContext = { runtime, handle, id, reportError: options.reportError };
  const { driver } = runtime;
  const { map } = runtime.capabilities;
  const call = (signal?: AbortSignal) => ({ signal: signal ?? new AbortController().signal });
  const wrap = (child: DriverSandbox): Sandbox => createSandboxFacade({ ...options, handle: child });
  const gated = createGatedApis(context, wrap);

  const sandbox = {
    id,
    provider: runtime.name,
    capabilities: runtime.capabilities,
    can(capability: CapabilityName): boolean {
      if (map[capability] === undefined) throw invalid(`unknown capability ${JSON.stringify(capability)}`);
      return (
        map[capability] !== "unsupported" &&
        (NAMESPACE_OF[capability] === undefined || gated[NAMESPACE_OF[capability]] !== undefined)
      );
    },
    getInfo: (opts: { signal?: AbortSignal | undefined } = {}) =>
      guard(context, "getInfo", async () =>
        toSandboxInfo(runtime.name, await driver.doGetInfo(handle, call(opts.signal))),
      ),
    setTimeout: (ttlMs: number) =>
      guard(context, "setTimeout", async () => {
        requireCapability(context, "setTimeout");
        if (typeof ttlMs !== "number" || !Number.isFinite(ttlMs) || ttlMs <= 0)
          throw invalid("ttlMs must be a positive number");
        await driverMethod(context, driver.doSetTimeout, "setTimeout")(handle, ttlMs, call());
      }),
    stop: () =>
      guard(context, "stop", async () => {
        requireCapability(context, "stop");
        await driverMethod(context, driver.doStop, "stop")(handle, call());
      }),
    pause: () =>
      guard(context, "pause", async () => {
        requireCapability(context, "pause");
        await driverMethod(context, driver.doPause, "pause")(handle, call());
      }),
    resume: () =>
      guard(context, "resume", async () => {
        if (map.stop === "unsupported" && map.pause === "unsupported") {
          throw new NotSupportedError("resume", runtime.name, "the provider supports neither stop nor pause");
        }
        await driverMethod(context, driver.doResume, "resume")(handle, call());
      }),
    destroy: () =>
      guard(context, "destroy", async () => {
        try {
          await driver.doDestroy(handle, call());
        } catch (error) {
          // Destroy is idempotent: a sandbox that is already gone is destroyed.
          if (!(SandboxError.isInstance(error) && error.code === "NotFound")) throw error;
        }
        await options.onDestroy(id);
      }),
    metrics: () =>
      guard(context, "metrics", async () => {
        requireCapability(context, "metrics");
        return driverMethod(context, driver.doMetrics, "metrics")(handle, call());
      }),
    raw: () => handle.native,
    // `await using sandbox = ...` destroys it at the end of the block (destroy is idempotent).
    [Symbol.asyncDispose]: () => sandbox.destroy(),
    commands: createCommandsApi(context),
    files: withWriteMany(context, createFilesApi(context)),
    ...gated,
  };
  return sandbox as unknown as Sandbox;
}
