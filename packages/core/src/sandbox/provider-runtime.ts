import type { LossyEmulation } from "../capabilities/capability-emulation.js";
import { EMULATABLE_DRIVER_METHODS } from "../capabilities/capability-methods.js";
import { type EffectiveCapabilities, resolveCapabilities } from "../capabilities/resolve-capabilities.js";
import { emulatedExecStream } from "../emulation/e3-streaming.js";
import { emulatedBackground } from "../emulation/e4-background.js";
import { emulatedFiles } from "../emulation/e5-files.js";
import { emulatedWatch } from "../emulation/e6-watch.js";
import { emulatedMetrics } from "../emulation/e8-metrics.js";
import type { EmulationContext } from "../emulation/emulation-context.js";
import { emulatedCodeInterpreter } from "../emulation/lossy-code-interpreter.js";
import { emulatedFork } from "../emulation/lossy-fork.js";
import { emulatedSnapshots } from "../emulation/lossy-snapshot.js";
import { createShellExec } from "../emulation/shell-exec.js";
import type { DriverSandbox, ProviderDriver, SandboxProvider } from "../spec/provider-spec.js";
import type { SandboxSpec } from "../spec/sandbox-spec.js";

/** Where emulations keep their state inside a sandbox unless the provider says otherwise. */
export const DEFAULT_EMULATION_STATE_DIR = "/tmp/.sbox";

/**
 * A provider as a client runs it: its effective capabilities and one driver in which every method is the
 * provider's own (native), the core's emulation (emulated), or absent (unsupported).
 */
export interface ProviderRuntime {
  readonly name: string;
  readonly provider: SandboxProvider;
  readonly capabilities: EffectiveCapabilities;
  readonly driver: ProviderDriver;
  readonly emulation: EmulationContext;
  /** The spec a sandbox was created with by this client, used by lossy fork to make look-alike siblings. */
  readonly createdSpecs: Map<string, SandboxSpec>;
}

type MethodName = keyof ProviderDriver;

/** Builds the runtime of `provider` under the client's options. */
export function createProviderRuntime(
  provider: SandboxProvider,
  options: { emulate?: readonly LossyEmulation[] | undefined; primitivesOnly?: boolean | undefined },
): ProviderRuntime {
  const capabilities = resolveCapabilities(provider, options);
  const { map, flags } = capabilities;
  const hidden = new Set<string>(options.primitivesOnly ? EMULATABLE_DRIVER_METHODS : []);
  const own = <K extends MethodName>(method: K): ProviderDriver[K] | undefined => {
    const fn = (provider as unknown as Record<string, unknown>)[method];
    if (hidden.has(method) || typeof fn !== "function") return undefined;
    return (fn as (...args: unknown[]) => unknown).bind(provider) as ProviderDriver[K];
  };

  // The exec primitive under the effective flags: in primitives-only mode E1/E2 run even if the provider
  // could do without them.
  // Object.create keeps prototype methods of class-based providers, which a spread would drop.
  const execProvider: SandboxProvider = Object.assign(Object.create(provider) as SandboxProvider, { flags });
  const emulation: EmulationContext = {
    provider: provider.name,
    exec: createShellExec(execProvider),
    execAcceptsStdin: provider.capabilities.stdin === "native",
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
      workdirs.set(sandbox.id, known);
    }
    return known;
  };

  const files = emulatedFiles(emulation);
  const pick = <K extends MethodName>(
    method: K,
    emulated: ProviderDriver[K] | undefined,
  ): ProviderDriver[K] | undefined => own(method) ?? emulated;
  const level = (name: keyof typeof map) => map[name];
  const gated = <K extends MethodName>(
    capability: keyof typeof map,
    method: K,
    emulated: () => ProviderDriver[K] | undefined,
  ): ProviderDriver[K] | undefined => {
    const l = level(capability);
    if (l === "native") return own(method);
    if (l === "emulated") return emulated();
    return undefined;
  };

  const background = () => emulatedBackground(emulation);
  const fileMethods = {
    doReadFile: pick("doReadFile", files.doReadFile),
    doWriteFile: pick("doWriteFile", files.doWriteFile),
    doListFiles: pick("doListFiles", files.doListFiles),
    doStat: pick("doStat", files.doStat),
    doMkdir: pick("doMkdir", files.doMkdir),
    doRemove: pick("doRemove", files.doRemove),
    doRename: pick("doRename", files.doRename),
    doReadFileStream: gated("filesUpload", "doReadFileStream", () => files.doReadFileStream),
    doWriteFileStream: gated("filesUpload", "doWriteFileStream", () => files.doWriteFileStream),
  };
  const createdSpecs = new Map<string, SandboxSpec>();
  const driver: ProviderDriver = {
    doCreate: provider.doCreate.bind(provider),
    doConnect: provider.doConnect.bind(provider),
    doDestroy: provider.doDestroy.bind(provider),
    doGetInfo: provider.doGetInfo.bind(provider),
    doExec: provider.doExec.bind(provider),
  };
  const assign = <K extends MethodName>(method: K, value: ProviderDriver[K] | undefined) => {
    if (value !== undefined) driver[method] = value;
  };
  for (const [method, value] of Object.entries(fileMethods)) assign(method as MethodName, value as never);
  assign(
    "doExecStream",
    gated("streaming", "doExecStream", () => emulatedExecStream(emulation)),
  );
  const bg = level("background") === "emulated" ? background() : undefined;
  assign(
    "doSpawn",
    gated("background", "doSpawn", () => bg?.doSpawn),
  );
  assign(
    "doListProcesses",
    gated("background", "doListProcesses", () => bg?.doListProcesses),
  );
  assign(
    "doConnectProcess",
    gated("background", "doConnectProcess", () => bg?.doConnectProcess),
  );
  assign(
    "doKillProcess",
    gated("killProcess", "doKillProcess", () => (bg ?? background()).doKillProcess),
  );
  assign(
    "doCreatePty",
    gated("pty", "doCreatePty", () => undefined),
  );
  assign(
    "doWatch",
    gated("filesWatch", "doWatch", () => emulatedWatch(emulation, { doListFiles: fileMethods.doListFiles! })),
  );
  assign(
    "doMetrics",
    gated("metrics", "doMetrics", () => emulatedMetrics(emulation)),
  );
  assign(
    "doList",
    gated("list", "doList", () => undefined),
  );
  assign(
    "doStop",
    gated("stop", "doStop", () => undefined),
  );
  assign(
    "doPause",
    gated("pause", "doPause", () => undefined),
  );
  if (level("stop") === "native" || level("pause") === "native") assign("doResume", own("doResume"));
  assign(
    "doSetTimeout",
    gated("setTimeout", "doSetTimeout", () => undefined),
  );
  assign(
    "doExposePort",
    gated("exposePort", "doExposePort", () => undefined),
  );
  if (level("exposePort") === "native") {
    assign("doListPorts", own("doListPorts"));
    assign("doUnexposePort", own("doUnexposePort"));
  }
  assign(
    "doFetchPort",
    gated("proxiedFetch", "doFetchPort", () => undefined),
  );
  assign(
    "doSetEgress",
    gated("egressControl", "doSetEgress", () => undefined),
  );
  assign(
    "doGetSshAccess",
    gated("ssh", "doGetSshAccess", () => undefined),
  );
  const snapshots = level("snapshot") === "emulated" ? emulatedSnapshots(emulation, workdir) : undefined;
  assign(
    "doCreateSnapshot",
    gated("snapshot", "doCreateSnapshot", () => snapshots?.doCreateSnapshot),
  );
  assign(
    "doRestoreSnapshot",
    gated("snapshot", "doRestoreSnapshot", () => snapshots?.doRestoreSnapshot),
  );
  assign(
    "doListSnapshots",
    gated("snapshot", "doListSnapshots", () => snapshots?.doListSnapshots),
  );
  assign(
    "doDeleteSnapshot",
    gated("snapshot", "doDeleteSnapshot", () => snapshots?.doDeleteSnapshot),
  );
  assign(
    "doFork",
    gated("fork", "doFork", () =>
      emulatedFork(
        emulation,
        workdir,
        (source, signal) => provider.doCreate(forkSpec(createdSpecs.get(source.id)), { signal }),
        fileMethods as Required<typeof fileMethods>,
        (sandbox, signal) => provider.doDestroy(sandbox, { signal }),
      ),
    ),
  );
  assign(
    "doRunCode",
    gated("codeInterpreter", "doRunCode", () => emulatedCodeInterpreter(emulation)),
  );
  const dispose = own("doDispose");
  if (dispose) driver.doDispose = dispose;
  return { name: provider.name, provider, capabilities, driver, emulation, createdSpecs };
}

/** A sibling for a lossy fork gets the source's template and env, never its idempotency key or signal. */
function forkSpec(spec: SandboxSpec | undefined): SandboxSpec {
  if (!spec) return {};
  const { idempotencyKey: _key, signal: _signal, ...rest } = spec;
  return rest;
}
