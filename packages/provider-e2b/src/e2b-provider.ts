import { defineProvider, type EgressPolicy, type SandboxProvider } from "@sbox/core/spec";
import {
  E2B_PROVIDER_NAME,
  type E2BCapabilities,
  e2bCapabilities,
  e2bFlags,
  e2bHonours,
} from "./e2b-capabilities.js";
import {
  type CommandContext,
  connectProcess,
  exec,
  execStream,
  killProcessTree,
  listProcesses,
  spawn,
} from "./e2b-commands.js";
import { mapE2BError } from "./e2b-errors.js";
import {
  listFiles,
  makeDir,
  readFile,
  readFileStream,
  removePath,
  renamePath,
  statFile,
  writeFile,
  writeFileStream,
} from "./e2b-files.js";
import {
  connectSandbox,
  createSandbox,
  destroySandbox,
  forkSandbox,
  listSandboxes,
  pauseSandbox,
  resumeSandbox,
  sandboxInfo,
  sandboxMetrics,
  setSandboxTimeout,
} from "./e2b-lifecycle.js";
import { egressRules } from "./e2b-network.js";
import { type E2BProviderOptions, resolveE2BOptions } from "./e2b-options.js";
import { exposePort } from "./e2b-ports.js";
import { createPty } from "./e2b-pty.js";
import { closeE2B, connectionOptions, type E2BSandbox, e2bSecrets, loadE2B } from "./e2b-sdk.js";
import { watchPath } from "./e2b-watch.js";

/** What `sandbox.raw()` returns for an E2B sandbox: the SDK's `Sandbox`. */
export type E2BSandboxNative = E2BSandbox;

/** The E2B provider type. */
export type E2BProvider = SandboxProvider<E2BCapabilities, E2BSandboxNative> & {
  /** E2B's port URLs exist for the sandbox's life: there is no unexpose (`sandbox.ports.unexpose` does not type-check). */
  readonly doUnexposePort?: undefined;
};

/**
 * The E2B provider, on the maintained `e2b` SDK (loaded on first use). Credentials come from `apiKey` or
 * `E2B_API_KEY`.
 *
 * ```ts
 * const client = createSandboxClient({ provider: e2b({ template: "base" }) });
 * ```
 */
export function e2b(options: E2BProviderOptions = {}): E2BProvider {
  const resolved = resolveE2BOptions(options);
  const ctx: CommandContext = { options: resolved };
  return defineProvider<E2BCapabilities, E2BSandboxNative>({
    specificationVersion: "v1",
    name: E2B_PROVIDER_NAME,
    capabilities: e2bCapabilities,
    flags: e2bFlags(resolved.pauseKeepsMemory),
    honours: e2bHonours,
    // Every exec hands `handle.kill()` a way to signal its tree (by the pid the daemon reports).
    execSignals: true,
    secrets: () => e2bSecrets(resolved),
    mapError: mapE2BError,

    doCreate: (spec, { signal }) => createSandbox(resolved, spec, signal),
    doConnect: (id, { signal }) => connectSandbox(resolved, id, signal),
    doDestroy: (s, { signal }) => destroySandbox(resolved, s, signal),
    doGetInfo: (s, { signal }) => sandboxInfo(resolved, s, signal),
    doExec: (s, request) => exec(ctx, s, request),
    doExecStream: (s, request) => execStream(ctx, s, request),
    doSpawn: (s, request) => spawn(ctx, s, request),
    doListProcesses: (s, { signal }) => listProcesses(ctx, s, signal),
    doConnectProcess: (s, pid, request) => connectProcess(ctx, s, pid, request),
    doKillProcess: (s, pid, signalName, { signal }) => killProcessTree(ctx, s, pid, signalName, signal),
    doCreatePty: (s, request) => createPty(ctx, s, request),

    doReadFile: (s, path, { signal }) => readFile(ctx, s, path, signal),
    doWriteFile: (s, path, data, { signal, mode }) => writeFile(ctx, s, path, data, mode, signal),
    doReadFileStream: (s, path, { signal }) => readFileStream(ctx, s, path, signal),
    doWriteFileStream: (s, path, data, { signal, mode }) => writeFileStream(ctx, s, path, data, mode, signal),
    doListFiles: (s, path, { signal }) => listFiles(ctx, s, path, signal),
    doStat: (s, path, { signal }) => statFile(ctx, s, path, signal),
    doMkdir: (s, path, { signal, recursive }) => makeDir(ctx, s, path, recursive, signal),
    doRemove: (s, path, { signal, recursive }) => removePath(ctx, s, path, recursive, signal),
    doRename: (s, from, to, { signal }) => renamePath(ctx, s, from, to, signal),
    doWatch: (s, path, options) => watchPath(ctx, s, path, options),

    doList: (filter, { signal }) => listSandboxes(resolved, filter, signal),
    doPause: (s, { signal }) => pauseSandbox(resolved, s, signal),
    doResume: (s, { signal }) => resumeSandbox(resolved, s, signal),
    doSetTimeout: (s, ttlMs, { signal }) => setSandboxTimeout(resolved, s, ttlMs, signal),
    doMetrics: (s, { signal }) => sandboxMetrics(resolved, s, signal),
    doFork: (s, { signal, count }) => forkSandbox(resolved, s, count, signal),

    doDispose: () => closeE2B(resolved),
    doExposePort: async (s, port, { private: isPrivate }) =>
      exposePort(s, port, isPrivate, resolved.previewUrl),
    async doSetEgress(s, policy: EgressPolicy, { signal }) {
      const rules = egressRules(policy);
      const { Sandbox } = await loadE2B(resolved);
      await Sandbox.updateNetwork(s.id, rules, connectionOptions(resolved, signal));
    },
  }) as E2BProvider;
}
