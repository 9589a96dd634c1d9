import type { CapabilityFlags, SpecField } from "@sbox/core/spec";

/**
 * What `@vercel/sandbox` does natively, as proven against the emulator of `@sbox/emulators/vercel`:
 *
 * - `streaming` is native: commands start detached and their output is followed through the NDJSON logs
 *   stream (no HTTP request lasts as long as the command); `background`, `killProcess`, `stdin` (Vercel's
 *   commands have none) and `filesWatch` are emulated by the core over it (E3-E6), as are the file
 *   operations the API lacks (list, stat, remove, rename) and `metrics` (E8).
 * - `filesUpload` is native: reads stream the body of `fs/read`; writes go through the SDK's tarball upload
 *   (`writeFiles`), in uploads of 8 MiB appended in the sandbox (the SDK holds each upload in memory).
 * - `stop` is native: the session ends and `resume` starts a new one; a persistent sandbox (the provider's
 *   default) keeps its files.
 * - `setTimeout` is native within Vercel's rule: a session's timeout can be extended, not shortened.
 * - `exposePort` is native for the ports declared at create (Vercel's routes); `egressControl` through the
 *   network policy.
 * - `snapshot` is native: `sandbox.snapshot()` (the whole disk; it stops the session, so the provider
 *   resumes the sandbox from it), restore by making the snapshot the sandbox's `currentSnapshotId` and
 *   starting a new session, list and delete through the SDK's snapshot calls. `fork` is native:
 *   `Sandbox.fork()` of a snapshot taken the moment fork is called (Vercel forks from the source's current
 *   snapshot, not its live state). Both keep files only: the session restarts, so running commands end.
 * - `pause`, `pty` (the interactive shell needs Vercel's WebSocket relay), `privatePreview`, `ssh`,
 *   `proxiedFetch`, `volumes` (drives), `gpu`, `region`, `secretsVault`, `codeInterpreter` are not offered
 *   by this provider.
 */
export const vercelCapabilities = {
  list: "native",
  stop: "native",
  pause: "unsupported",
  setTimeout: "native",
  streaming: "native",
  background: "emulated",
  killProcess: "emulated",
  stdin: "emulated",
  pty: "unsupported",
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
  volumes: "unsupported",
  gpu: "unsupported",
  region: "unsupported",
  secretsVault: "unsupported",
  metrics: "emulated",
} as const;

/** The Vercel provider's capability map type. */
export type VercelCapabilities = typeof vercelCapabilities;

/**
 * Behaviour flags. Commands take cwd and env and report exit codes; Vercel stops a session when its
 * timeout runs out (`nativeExpiry`); ports are routed only when declared at create (`declaredPorts`).
 * Files survive stop only in persistent sandboxes.
 */
export function vercelFlags(persistent: boolean): CapabilityFlags {
  return {
    perCommandEnvCwd: true,
    exitCodeNative: true,
    preservesDiskOnStop: persistent,
    preservesMemoryOnPause: false,
    previewModel: "declaredPorts",
    nativeExpiry: true,
    snapshotFilesystemOnly: true,
  };
}

/** Spec fields honoured at create. Memory follows vCPUs on Vercel (2 GB each), so only `resources.vcpus`. */
export const vercelHonours: readonly SpecField[] = [
  "template",
  "name",
  "env",
  "metadata",
  "ttlMs",
  "resources.vcpus",
  "ports",
  "network",
];
