import type { CapabilityFlags, SpecField } from "@sbox/core/spec";

/**
 * What the Docker provider does natively, what the core emulates on top of its exec, and what it cannot do.
 *
 * - `background` is emulated: Docker cannot re-attach to an exec's output or signal an exec, so a native
 *   version would re-implement the core's detached-process emulation (E4) inside this package.
 * - `filesWatch` is emulated (polling): images without inotify tools (busybox) cannot watch natively, and
 *   the level is declared per provider, not per image.
 * - `privatePreview`, `ssh`, `proxiedFetch`, `codeInterpreter`, `gpu`, `region`, `secretsVault` have no
 *   Docker Engine counterpart here.
 */
export const dockerCapabilities = {
  list: "native",
  stop: "native",
  pause: "native",
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
  snapshot: "native",
  fork: "native",
  volumes: "native",
  gpu: "unsupported",
  region: "unsupported",
  secretsVault: "unsupported",
  metrics: "native",
} as const;

/** The Docker provider's capability map type. */
export type DockerCapabilities = typeof dockerCapabilities;

/**
 * Behaviour flags. Expiry is enforced by `client.reap()` (`nativeExpiry: false`); snapshots and forks are
 * `docker commit` images, so they carry the filesystem only.
 */
export const dockerFlags: CapabilityFlags = {
  perCommandEnvCwd: true,
  exitCodeNative: true,
  preservesDiskOnStop: true,
  preservesMemoryOnPause: true,
  previewModel: "declaredPorts",
  nativeExpiry: false,
  snapshotFilesystemOnly: true,
};

/** A spec field the Docker provider honours (a field not listed here fails to type-check in `create`). */
export type DockerHonouredField = Extract<
  SpecField,
  | "template"
  | "name"
  | "env"
  | "metadata"
  | "ttlMs"
  | "resources.vcpus"
  | "resources.memoryMB"
  | "ports"
  | "network"
  | "volumes"
>;

/** Spec fields honoured at create. `resources.diskMB` is not: overlay2 quotas need xfs with pquota. */
export const dockerHonours: readonly DockerHonouredField[] = [
  "template",
  "name",
  "env",
  "metadata",
  "ttlMs",
  "resources.vcpus",
  "resources.memoryMB",
  "ports",
  "network",
  "volumes",
];
