import type { CapabilityName } from "../capabilities/capability-names.js";
import { namespaceOf } from "../capabilities/capability-namespaces.js";
import { EXPIRES_AT_METADATA_KEY } from "../client/validate-spec.js";
import { SandboxError } from "../errors/sandbox-error.js";
import type { DriverSandbox, DriverSandboxInfo } from "../spec/provider-spec.js";
import { createCommandsApi } from "./commands-api.js";
import { createFilesApi } from "./files-api.js";
import { writeMany } from "./files-write-many.js";
import { createGatedApis } from "./gated-apis.js";
import type { ProviderRuntime } from "./provider-runtime.js";
import { callOptions, gatedMethod, guard, invalidInput, type SandboxContext } from "./sandbox-context.js";
import type { FilesApi, Sandbox, SandboxInfo } from "./sandbox-types.js";

/** What the client hands a new facade. */
export interface SandboxFacadeOptions {
  readonly runtime: ProviderRuntime;
  readonly handle: DriverSandbox;
  readonly reportError: SandboxContext["reportError"];
  readonly onDestroy: (id: string) => Promise<void>;
}

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

/** Builds the `Sandbox` facade over one driver sandbox. */
export function createSandboxFacade(options: SandboxFacadeOptions): Sandbox {
  const { runtime, handle } = options;
  const id = qualifiedId(runtime.name, handle.id);
  const context: SandboxContext = { runtime, handle, id, reportError: options.reportError };
  const { driver } = runtime;
  const { map } = runtime.capabilities;
  const wrap = (child: DriverSandbox): Sandbox => createSandboxFacade({ ...options, handle: child });
  const gated = createGatedApis(context, wrap);

  const sandbox = {
    id,
    provider: runtime.name,
    capabilities: runtime.capabilities,
    can(capability: CapabilityName): boolean {
      if (map[capability] === undefined)
        throw invalidInput(`unknown capability ${JSON.stringify(capability)}`);
      const namespace = namespaceOf(capability);
      return map[capability] !== "unsupported" && (namespace === undefined || gated[namespace] !== undefined);
    },
    getInfo: (opts: { signal?: AbortSignal | undefined } = {}) =>
      guard(context, "getInfo", async () =>
        toSandboxInfo(runtime.name, await driver.doGetInfo(handle, callOptions(opts.signal))),
      ),
    setTimeout: (ttlMs: number) =>
      guard(context, "setTimeout", async () => {
        const setTimeout = gatedMethod(context, "setTimeout", "doSetTimeout");
        if (typeof ttlMs !== "number" || !Number.isFinite(ttlMs) || ttlMs <= 0)
          throw invalidInput("ttlMs must be a positive number");
        await setTimeout(handle, ttlMs, callOptions());
      }),
    stop: () =>
      guard(context, "stop", async () => gatedMethod(context, "stop", "doStop")(handle, callOptions())),
    pause: () =>
      guard(context, "pause", async () => gatedMethod(context, "pause", "doPause")(handle, callOptions())),
    resume: () =>
      guard(context, "resume", async () => {
        // doResume serves both stop and pause: without either there is nothing to resume.
        const capability = map.stop === "unsupported" ? "pause" : "stop";
        const detail = "the provider supports neither stop nor pause";
        await gatedMethod(context, capability, "doResume", "resume", detail)(handle, callOptions());
      }),
    destroy: () =>
      guard(context, "destroy", async () => {
        try {
          await driver.doDestroy(handle, callOptions());
        } catch (error) {
          // Destroy is idempotent: a sandbox that is already gone is destroyed.
          if (!(SandboxError.isInstance(error) && error.code === "NotFound")) throw error;
        }
        await options.onDestroy(id);
      }),
    metrics: () =>
      guard(context, "metrics", async () =>
        gatedMethod(context, "metrics", "doMetrics")(handle, callOptions()),
      ),
    raw: () => handle.native,
    // `await using sandbox = ...` destroys it at the end of the block (destroy is idempotent).
    [Symbol.asyncDispose]: () => sandbox.destroy(),
    commands: createCommandsApi(context),
    files: withWriteMany(context, createFilesApi(context)),
    ...gated,
  };
  return sandbox as unknown as Sandbox;
}
