import type { CapabilityFlags, SpecField } from "@sbox/core/spec";

/**
 * What the Kubernetes provider does in mode `pod`, and why the rest is not there:
 *
 * - `stop` and `pause` are unsupported: a pod cannot be stopped and started again (deleting it loses the
 *   container's filesystem), and Kubernetes has no freezer API. Mode `agent-sandbox` has `stop`.
 * - `background` and `filesWatch` are the core's emulations over exec: Kubernetes exec cannot re-attach
 *   to a running command, and there is no file event API.
 * - `metrics` is the core's emulation (cgroup and /proc files read by exec): metrics.k8s.io needs a
 *   metrics-server that many clusters lack, and reports in 15 s windows.
 * - `snapshot`, `fork`, `volumes`, `gpu`, `region`, `secretsVault`, `ssh`, `privatePreview`,
 *   `proxiedFetch` and the code interpreter have no counterpart here yet.
 */
export const kubernetesCapabilities = {
  list: "native",
  stop: "unsupported",
  pause: "unsupported",
  setTimeout: "native",
  streaming: "native",
  background: "emulated",
  killProcess: "native",
  stdin: "native",
  pty: "native",
  filesWatch: "emulated",
  filesUpload: "native",
  codeInterpreter: "unsupported",
  statefulKernel: "unsupported",
  exposePort: "native",
  privatePreview: "unsupported",
  egressControl: "native",
  ssh: "unsupported",
  proxiedFetch: "unsupported",
  snapshot: "unsupported",
  fork: "unsupported",
  volumes: "unsupported",
  gpu: "unsupported",
  region: "unsupported",
  secretsVault: "unsupported",
  metrics: "emulated",
} as const;

/**
 * Mode `agent-sandbox`: the same, plus `stop` (`operatingMode: Suspended` deletes the pod and keeps the
 * Sandbox; `resume` brings a fresh pod back — the root filesystem is not kept, so `preservesDiskOnStop`
 * is false).
 */
export const kubernetesAgentSandboxCapabilities = {
  list: "native",
  stop: "native",
  pause: "unsupported",
  setTimeout: "native",
  streaming: "native",
  background: "emulated",
  killProcess: "native",
  stdin: "native",
  pty: "native",
  filesWatch: "emulated",
  filesUpload: "native",
  codeInterpreter: "unsupported",
  statefulKernel: "unsupported",
  exposePort: "native",
  privatePreview: "unsupported",
  egressControl: "native",
  ssh: "unsupported",
  proxiedFetch: "unsupported",
  snapshot: "unsupported",
  fork: "unsupported",
  volumes: "unsupported",
  gpu: "unsupported",
  region: "unsupported",
  secretsVault: "unsupported",
  metrics: "emulated",
} as const;

/** The capability map type of mode `pod`. */
export type KubernetesCapabilities = typeof kubernetesCapabilities;
/** The capability map type of mode `agent-sandbox`. */
export type KubernetesAgentSandboxCapabilities = typeof kubernetesAgentSandboxCapabilities;

/**
 * Behaviour flags. Exec takes neither env nor cwd (the core puts them into the command); exit codes come
 * from the status channel; exposed ports are loopback port-forwards of this process.
 */
export const kubernetesFlags: CapabilityFlags = {
  perCommandEnvCwd: false,
  exitCodeNative: true,
  preservesDiskOnStop: false,
  preservesMemoryOnPause: false,
  previewModel: "localhost",
  nativeExpiry: false,
  snapshotFilesystemOnly: false,
};

/** Flags of mode `agent-sandbox`: the Sandbox's `shutdownTime` is enforced by its controller. */
export const kubernetesAgentSandboxFlags: CapabilityFlags = {
  perCommandEnvCwd: false,
  exitCodeNative: true,
  preservesDiskOnStop: false,
  preservesMemoryOnPause: false,
  previewModel: "localhost",
  nativeExpiry: true,
  snapshotFilesystemOnly: false,
};

/** Spec fields honoured at create. `resources.diskMB` is not: ephemeral-storage limits are eviction, not a disk size. */
export const kubernetesHonours: readonly SpecField[] = [
  "template",
  "name",
  "env",
  "metadata",
  "ttlMs",
  "resources.vcpus",
  "resources.memoryMB",
  "ports",
  "network",
];
