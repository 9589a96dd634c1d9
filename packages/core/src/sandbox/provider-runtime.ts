import type { LossyEmulation } from "../capabilities/capability-emulation.js";
import {
  CAPABILITY_DRIVER_METHODS,
  type DriverMethodName,
  EMULATABLE_DRIVER_METHODS,
  FILE_DRIVER_METHODS,
} from "../capabilities/capability-methods.js";
import type { CapabilityName } from "../capabilities/capability-names.js";
import {
  execStdinOf,
  type ResolvedCapabilities,
  resolveCapabilities,
} from "../capabilities/resolve-capabilities.js";
import {
  bufferedFileStreams,
  CAPABILITY_EMULATIONS,
  type EmulationSources,
} from "../emulation/capability-emulations.js";
import { emulatedExecStream } from "../emulation/e3-streaming.js";
import { type EmulatedBackground, emulatedBackground } from "../emulation/e4-background.js";
import { type EmulatedFileMethods, emulatedFiles } from "../emulation/e5-files.js";
import type { EmulationContext } from "../emulation/emulation-context.js";
import { createExecPipeline, type ExecPipeline } from "../emulation/exec-pipeline.js";
import type { DriverSandbox, ProviderDriver, SandboxProvider } from "../spec/provider-spec.js";
import { resolveSandboxPath } from "../spec/sandbox-paths.js";
import type { SandboxSpec } from "../spec/sandbox-spec.js";

/** Where emulations keep their state inside a sandbox unless the provider says otherwise. */
export const DEFAULT_EMULATION_STATE_DIR = "/tmp/.sbox";

/**
 * The driver a runtime hands the facade: every file method is present (the provider's, E5's, or for
 * streams without `filesUpload` a whole-file fallback), and every path it is given is resolved first.
 */
export type RuntimeDriver = ProviderDriver & Pick<EmulatedFileMethods, keyof EmulatedFileMethods>;

/**
 * A provider as a client runs it: its effective capabilities and one driver in which every method is the
 * provider's own (native), the core's emulation (emulated), or absent (unsupported).
 */
export interface ProviderRuntime {
  readonly name: string;
  readonly provider: SandboxProvider;
  readonly capabilities: ResolvedCapabilities;
  readonly driver: RuntimeDriver;
  /** E1, E2 and the streaming choice for every command. */
  readonly exec: ExecPipeline;
  readonly emulation: EmulationContext;
  /** The spec a sandbox was created with by this client, used by lossy fork to make look-alike siblings. */
  readonly createdSpecs: Map<string, SandboxSpec>;
  /** The provider's credentials, scrubbed from every error that leaves the SDK. */
  secrets(): readonly (string | undefined)[];
  /** Forgets what the runtime keeps about a destroyed sandbox (its spec, its working directory). */
  forget(nativeId: string): void;
  /** The directory commands start in (the declared `workdir`, else what `pwd` prints there, once). */
  workdir(sandbox: DriverSandbox): Promise<string>;
}

/** Makes `make()` once, on first use. */
function once<T>(make: () => T): () => T {
  let value: T | undefined;
  let made = false;
  return () => {
    if (!made) {
      value = make();
      made = true;
    }
    return value as T;
  };
}

/** Methods whose path arguments are resolved against the sandbox's working directory. */
const PATH_METHODS = [...FILE_DRIVER_METHODS, "doReadFileStream", "doWriteFileStream", "doWatch"] as const;

/** Builds the runtime of `provider` under the client's options. */
export function createProviderRuntime(
  provider: SandboxProvider,
  options: { emulate?: readonly LossyEmulation[] | undefined; primitivesOnly?: boolean | undefined },
): ProviderRuntime {
  const capabilities = resolveCapabilities(provider, options);
  const { map, flags } = capabilities;
  const hidden = new Set<string>(options.primitivesOnly ? EMULATABLE_DRIVER_METHODS : []);
  const own = <K extends DriverMethodName>(method: K): ProviderDriver[K] | undefined => {
    const fn = (provider as unknown as Record<string, unknown>)[method];
    if (hidden.has(method) || typeof fn !== "function") return undefined;
    return (fn as (...args: unknown[]) => unknown).bind(provider) as ProviderDriver[K];
  };

  const stream = once(() => emulatedExecStream(emulation));
  // Under the effective flags: in primitives-only mode E1/E2 run even if the provider could do without them.
  const exec = createExecPipeline({
    provider: provider.name,
    flags,
    doExec: provider.doExec.bind(provider),
    doExecStream: map.streaming === "native" ? own("doExecStream") : undefined,
    streaming: map.streaming,
    stdin: map.stdin,
    // Primitives-only mode runs every user command on E3, so the provider's own signalling never applies.
    execSignals: provider.execSignals === true && !options.primitivesOnly,
    emulatedStream: stream,
  });
  const emulation: EmulationContext = {
    provider: provider.name,
    exec: exec.shell,
    execStdin: execStdinOf(provider),
    stateDir: provider.emulationStateDir ?? DEFAULT_EMULATION_STATE_DIR,
  };

  const workdirs = new Map<string, Promise<string>>();
  const workdir = (sandbox: DriverSandbox): Promise<string> => {
    if (provider.workdir) return Promise.resolve(provider.workdir);
    let known = workdirs.get(sandbox.id);
    if (!known) {
      known = emulation
        .exec(sandbox, "pwd", { signal: AbortSignal.timeout(60_000) })
        .then((r) => new TextDecoder().decode(r.stdout).trim() || "/");
      known.catch(() => workdirs.delete(sandbox.id));
      workdirs.set(sandbox.id, known);
    }
    return known;
  };

  const e5 = once(() => emulatedFiles(emulation));
  const fileMethod = <K extends keyof EmulatedFileMethods>(method: K): EmulatedFileMethods[K] =>
    (own(method) as EmulatedFileMethods[K] | undefined) ?? e5()[method];
  const createdSpecs = new Map<string, SandboxSpec>();
  const sources: EmulationSources = {
    context: emulation,
    stream,
    background: once((): EmulatedBackground => emulatedBackground(emulation)),
    files: e5,
    fileMethods: {
      doListFiles: fileMethod("doListFiles"),
      doReadFileStream: fileMethod("doReadFileStream"),
      doWriteFileStream: fileMethod("doWriteFileStream"),
    },
    workdir,
    createSibling: (source, signal) => provider.doCreate(forkSpec(createdSpecs.get(source.id)), { signal }),
    destroy: (sandbox, signal) => provider.doDestroy(sandbox, { signal }),
  };

  const driver: Record<string, unknown> = {
    doCreate: provider.doCreate.bind(provider),
    doConnect: provider.doConnect.bind(provider),
    doDestroy: provider.doDestroy.bind(provider),
    doGetInfo: provider.doGetInfo.bind(provider),
    doExec: provider.doExec.bind(provider),
  };
  for (const method of FILE_DRIVER_METHODS) driver[method] = fileMethod(method);
  // One loop decides every capability: the provider's methods when native, the core's when emulated.
  for (const [capability, methods] of Object.entries(CAPABILITY_DRIVER_METHODS)) {
    const level = map[capability as CapabilityName];
    if (level === "native") {
      for (const method of [...methods.required, ...(methods.optional ?? [])]) {
        const fn = own(method);
        if (fn) driver[method] = fn;
      }
    } else if (level === "emulated") {
      const emulated = CAPABILITY_EMULATIONS[capability as CapabilityName]?.(sources) ?? {};
      for (const [method, fn] of Object.entries(emulated)) if (fn) driver[method] = fn;
    }
  }
  // A native kill of an emulated background process: E4 first notes the signal in the process's record,
  // so that wait() names it (the provider's kill cannot tell E4 what it sent).
  const nativeKill = driver.doKillProcess as ProviderDriver["doKillProcess"];
  if (map.background === "emulated" && map.killProcess === "native" && nativeKill) {
    const background = sources.background();
    driver.doKillProcess = async (
      sandbox: DriverSandbox,
      pid: number,
      signal: string,
      options: { signal: AbortSignal },
    ) => {
      await background.recordSignal(sandbox, pid, signal, options.signal);
      return nativeKill(sandbox, pid, signal, options);
    };
  }
  if (driver.doReadFileStream === undefined)
    Object.assign(driver, bufferedFileStreams(driver as unknown as RuntimeDriver));
  const dispose = own("doDispose");
  if (dispose) driver.doDispose = dispose;

  // Every path reaches a driver absolute and normalised: relative ones are taken from the working directory.
  const resolve = async (sandbox: DriverSandbox, path: string): Promise<string> =>
    path.startsWith("/") ? resolveSandboxPath(path) : resolveSandboxPath(path, await workdir(sandbox));
  for (const method of PATH_METHODS) {
    const fn = driver[method] as
      | ((sandbox: DriverSandbox, path: string, ...rest: unknown[]) => unknown)
      | undefined;
    if (!fn) continue;
    driver[method] =
      method === "doRename"
        ? async (sandbox: DriverSandbox, from: string, to: string, ...rest: unknown[]) =>
            fn(sandbox, await resolve(sandbox, from), await resolve(sandbox, to), ...rest)
        : async (sandbox: DriverSandbox, path: string, ...rest: unknown[]) =>
            fn(sandbox, await resolve(sandbox, path), ...rest);
  }

  return {
    name: provider.name,
    provider,
    capabilities,
    driver: driver as unknown as RuntimeDriver,
    exec,
    emulation,
    createdSpecs,
    secrets: () => provider.secrets?.() ?? [],
    forget: (nativeId) => {
      createdSpecs.delete(nativeId);
      workdirs.delete(nativeId);
    },
    workdir,
  };
}

/** A sibling for a lossy fork gets the source's template and env, never its idempotency key or signal. */
function forkSpec(spec: SandboxSpec | undefined): SandboxSpec {
  if (!spec) return {};
  const { idempotencyKey: _key, signal: _signal, ...rest } = spec;
  return rest;
}
