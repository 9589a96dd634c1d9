import type { CapabilityFlags, SpecField } from "@sbox/core/spec";

/**
 * What this provider offers, as proven against the Daytona emulator of `@sbox/emulators`. Lifecycle (list
 * by labels, stop and start) is native. Commands go through Daytona's sessions, under a supervisor whose
 * encoding carries output byte-exact through the daemon's lossy line labellers: streaming is native (an
 * async session command followed on its logs WebSocket, signalled through the pid its supervisor records:
 * the provider declares `execSignals`); background processes, kill by pid, stdin, files, watch and metrics are
 * `emulated` by the core over the session exec (E1-E8). Terminals (`pty`) are Daytona's own, over the
 * SDK's `createPty` WebSocket. Ports are Daytona's preview links (per-port subdomains of its proxy): signed
 * URLs, or token-guarded links for private ports. The rest is not offered by this provider.
 */
export const daytonaCapabilities = {
  list: "native",
  stop: "native",
  pause: "unsupported",
  setTimeout: "unsupported",
  streaming: "native",
  background: "emulated",
  killProcess: "emulated",
  stdin: "emulated",
  pty: "native",
  filesWatch: "emulated",
  filesUpload: "emulated",
  codeInterpreter: "unsupported",
  statefulKernel: "unsupported",
  exposePort: "native",
  privatePreview: "native",
  egressControl: "unsupported",
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

/** The capability map's type. */
export type DaytonaCapabilities = typeof daytonaCapabilities;

/**
 * Behaviour flags. Sessions answer exit codes (no marker needed) but take no per-command cwd/env (E1
 * applies). Stop keeps the filesystem. Daytona's own expiry timers count whole minutes, so the exact ttl is
 * enforced by `client.reap()` (the timers still remove a sandbox whose client went away).
 */
export const daytonaFlags: CapabilityFlags = {
  perCommandEnvCwd: false,
  exitCodeNative: true,
  preservesDiskOnStop: true,
  preservesMemoryOnPause: false,
  previewModel: "subdomain",
  nativeExpiry: false,
  snapshotFilesystemOnly: true,
};

/** Spec fields a Daytona sandbox honours at create, from a snapshot. */
export const daytonaHonours: readonly SpecField[] = ["template", "name", "env", "metadata", "ttlMs"];

/**
 * Spec fields honoured by a provider made with these options: from an image (`image` option) resources
 * too; from a snapshot not, since Daytona sizes that sandbox by its snapshot and refuses resources (400).
 */
export function daytonaHonoursFor(options: { readonly image: string | undefined }): readonly SpecField[] {
  return options.image === undefined
    ? daytonaHonours
    : [...daytonaHonours, "resources.vcpus", "resources.memoryMB", "resources.diskMB"];
}
