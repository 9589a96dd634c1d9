import { defineProvider, type EgressPolicy, type SandboxProvider } from "@sbox/core/spec";
import {
  type VercelCapabilities,
  vercelCapabilities,
  vercelFlags,
  vercelHonours,
} from "./vercel-capabilities.js";
import { exec, execStream } from "./vercel-commands.js";
import { mapVercelError } from "./vercel-errors.js";
import { makeDir, readFile, readFileStream, writeFile, writeFileStream } from "./vercel-files.js";
import {
  connectSandbox,
  createSandbox,
  destroySandbox,
  listSandboxes,
  resumeSandbox,
  sandboxInfo,
  setSandboxTimeout,
  stopSandbox,
} from "./vercel-lifecycle.js";
import { VERCEL_PROVIDER_NAME } from "./vercel-names.js";
import { networkPolicyOf } from "./vercel-network.js";
import { resolveVercelOptions, type VercelProviderOptions } from "./vercel-options.js";
import { exposePort, listPorts } from "./vercel-ports.js";
import { type VercelSandbox, vercelSecrets } from "./vercel-sdk.js";
import {
  createSnapshot,
  deleteSnapshot,
  forkSandbox,
  listSnapshots,
  restoreSnapshot,
} from "./vercel-snapshots.js";

/** What `sandbox.raw()` returns for a Vercel sandbox: the SDK's `Sandbox`. */
export type VercelSandboxNative = VercelSandbox;

/** The Vercel provider type. */
export type VercelProvider = SandboxProvider<VercelCapabilities, VercelSandboxNative>;

/**
 * The Vercel Sandbox provider, on the maintained `@vercel/sandbox` SDK (loaded on first use). Credentials
 * are an access token with team and project (`token`, `teamId`, `projectId` or `VERCEL_TOKEN`,
 * `VERCEL_TEAM_ID`, `VERCEL_PROJECT_ID`) or an OIDC token (`oidcToken` or `VERCEL_OIDC_TOKEN`).
 *
 * ```ts
 * const client = createSandboxClient({ provider: vercel({ runtime: "node24" }) });
 * ```
 */
export function vercel(options: VercelProviderOptions = {}): VercelProvider {
  const resolved = resolveVercelOptions(options);
  return defineProvider<VercelCapabilities, VercelSandboxNative>({
    specificationVersion: "v1",
    name: VERCEL_PROVIDER_NAME,
    capabilities: vercelCapabilities,
    flags: vercelFlags(resolved.persistent),
    honours: vercelHonours,
    // Every exec hands `handle.kill()` Vercel's own kill of the command, with the signal asked for.
    execSignals: true,
    secrets: () => vercelSecrets(resolved),
    mapError: mapVercelError,

    doCreate: (spec, { signal }) => createSandbox(resolved, spec, signal),
    doConnect: (id, { signal }) => connectSandbox(resolved, id, signal),
    doDestroy: (s, { signal }) => destroySandbox(s, signal),
    doGetInfo: (s, { signal }) => sandboxInfo(resolved, s, signal),
    doExec: (s, request) => exec(s, request),
    doExecStream: (s, request) => execStream(s, request),

    doReadFile: (s, path, { signal }) => readFile(s, path, signal),
    doWriteFile: (s, path, data, { signal, mode }) => writeFile(s, path, data, mode, signal),
    doMkdir: (s, path, { signal, recursive }) => makeDir(s, path, recursive, signal),
    doReadFileStream: (s, path, { signal }) => readFileStream(s, path, signal),
    doWriteFileStream: (s, path, data, { signal, mode }) => writeFileStream(s, path, data, mode, signal),

    doList: (filter, { signal }) => listSandboxes(resolved, filter, signal),
    doStop: (s, { signal }) => stopSandbox(s, signal),
    doResume: (s, { signal }) => resumeSandbox(resolved, s, signal),
    doSetTimeout: (s, ttlMs, { signal }) => setSandboxTimeout(resolved, s, ttlMs, signal),

    doExposePort: async (s, port) => exposePort(s, port),
    doListPorts: async (s) => listPorts(s),
    async doSetEgress(s, policy: EgressPolicy, { signal }) {
      await s.native.updateNetworkPolicy(networkPolicyOf(policy), { signal });
    },

    doCreateSnapshot: (s, { signal, name }) => createSnapshot(resolved, s, name, signal),
    doRestoreSnapshot: (s, ref, { signal }) => restoreSnapshot(resolved, s, ref, signal),
    doListSnapshots: (s, { signal }) => listSnapshots(s, signal),
    doDeleteSnapshot: (_s, ref, { signal }) => deleteSnapshot(resolved, ref, signal),
    doFork: (s, { signal, count }) => forkSandbox(resolved, s, count, signal),
  }) as VercelProvider;
}
