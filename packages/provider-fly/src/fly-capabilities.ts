import type { CapabilityFlags } from "@sbox/core/spec";

/**
 * What Fly Machines offer through the public Machines API. Its exec is buffered (one request, the whole
 * output in the answer, text only), so streaming, background processes, kill, stdin, file transfer,
 * watch and metrics are `emulated` by the core over that exec (docs/capabilities.md, E1-E8). Lifecycle, region
 * placement and declared ports are native. Snapshots, forks, volumes, GPUs, egress control, private
 * previews, ssh, pty and secrets are not offered through this API by this provider.
 */
export const flyCapabilities = {
  list: "native",
  stop: "native",
  pause: "native",
  setTimeout: "unsupported",
  streaming: "emulated",
  background: "emulated",
  killProcess: "emulated",
  stdin: "emulated",
  pty: "unsupported",
  filesWatch: "emulated",
  filesUpload: "emulated",
  codeInterpreter: "unsupported",
  statefulKernel: "unsupported",
  exposePort: "native",
  privatePreview: "unsupported",
  egressControl: "unsupported",
  ssh: "unsupported",
  proxiedFetch: "unsupported",
  snapshot: "unsupported",
  fork: "unsupported",
  volumes: "unsupported",
  gpu: "unsupported",
  region: "native",
  secretsVault: "unsupported",
  metrics: "emulated",
} as const;

/**
 * Behaviour flags. Fly's exec returns `exit_code` (no marker needed) but has no cwd/env (E1 applies).
 * A stopped machine is reset to its image when started again, so stop keeps no files; suspend snapshots
 * memory and disk and start resumes from it (Fly documents the resume as attempted, not guaranteed).
 * Ports are reachable only when declared at create; expiry is enforced by `client.reap()`.
 */
export const flyFlags: CapabilityFlags = {
  perCommandEnvCwd: false,
  exitCodeNative: true,
  preservesDiskOnStop: false,
  preservesMemoryOnPause: true,
  previewModel: "declaredPorts",
  nativeExpiry: false,
  snapshotFilesystemOnly: true,
};
