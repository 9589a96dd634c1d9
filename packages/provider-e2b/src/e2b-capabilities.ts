import type { CapabilityFlags, SpecField } from "@sbox/core/spec";

/** The provider name, as used in ids and errors. */
export const E2B_PROVIDER_NAME = "e2b";

/**
 * What the `e2b` SDK does natively, and what it cannot do (read off the SDK's own types):
 *
 * - `stop` is unsupported: E2B has no stopped state. `pause({ keepMemory: false })` keeps only the disk but
 *   is reported as `paused` like any pause, so a stop could not be told apart (see `pauseKeepsMemory`).
 * - `snapshot` is unsupported: E2B snapshots are templates new sandboxes start from; nothing restores a
 *   running sandbox in place, which is what `snapshots.restore()` promises.
 * - `privatePreview` is unsupported: access control is one sandbox-wide setting at create
 *   (`allowPublicTraffic`), not a per-port choice.
 * - `codeInterpreter`/`statefulKernel` live in a separate SDK and template (`@e2b/code-interpreter`).
 * - `proxiedFetch`, `ssh`, `volumes`, `gpu`, `region`, `secretsVault` are not offered by this provider.
 */
export const e2bCapabilities = {
  list: "native",
  stop: "unsupported",
  pause: "native",
  setTimeout: "native",
  streaming: "native",
  background: "native",
  killProcess: "native",
  stdin: "native",
  pty: "native",
  filesWatch: "native",
  filesUpload: "native",
  codeInterpreter: "unsupported",
  statefulKernel: "unsupported",
  exposePort: "native",
  privatePreview: "unsupported",
  egressControl: "native",
  ssh: "unsupported",
  proxiedFetch: "unsupported",
  snapshot: "unsupported",
  fork: "native",
  volumes: "unsupported",
  gpu: "unsupported",
  region: "unsupported",
  secretsVault: "unsupported",
  metrics: "native",
} as const;

/** The E2B provider's capability map type. */
export type E2BCapabilities = typeof e2bCapabilities;

/**
 * Behaviour flags. E2B enforces the sandbox timeout itself (`nativeExpiry`); every port is reachable at
 * `https://<port>-<id>.<domain>` (`subdomain`); forks carry memory and processes, not only files.
 */
export function e2bFlags(pauseKeepsMemory: boolean): CapabilityFlags {
  return {
    perCommandEnvCwd: true,
    exitCodeNative: true,
    preservesDiskOnStop: true,
    preservesMemoryOnPause: pauseKeepsMemory,
    previewModel: "subdomain",
    nativeExpiry: true,
    snapshotFilesystemOnly: false,
  };
}

/**
 * Spec fields honoured at create. `ports` needs nothing: every port of an E2B sandbox is reachable through
 * its host. Resources come from the template, so `resources.*` is refused rather than ignored.
 */
export const e2bHonours: readonly SpecField[] = ["template", "env", "metadata", "ttlMs", "ports", "network"];
