/**
 * What the local provider does, with bubblewrap (or `isolation: "auto"`). Every `native` entry has its
 * driver method and a test against real processes; `defineProvider` checks the map is complete.
 *
 * - codeInterpreter / statefulKernel: no kernel is shipped (opt into the core's stateless runner with
 *   `emulate: ["codeInterpreter"]`).
 * - privatePreview: ports are plain loopback listeners; there is nothing to put a token in front of.
 * - ssh: no ssh server is run.
 * - volumes, gpu, region, secretsVault: nothing to mount, place or inject on a single host.
 */
export const localCapabilities = {
  list: "native",
  stop: "native",
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
  proxiedFetch: "native",
  snapshot: "native",
  fork: "native",
  volumes: "unsupported",
  gpu: "unsupported",
  region: "unsupported",
  secretsVault: "unsupported",
  metrics: "native",
} as const;

/**
 * What the local provider does with `isolation: "none"`: the same, except egress control, which needs a
 * network namespace.
 */
export const localUnisolatedCapabilities: Omit<typeof localCapabilities, "egressControl"> & {
  readonly egressControl: "unsupported";
} = { ...localCapabilities, egressControl: "unsupported" };

/** The behaviour flags of the local provider. */
export const localFlags = {
  perCommandEnvCwd: true,
  exitCodeNative: true,
  preservesDiskOnStop: true,
  preservesMemoryOnPause: true,
  previewModel: "localhost",
  // Expiry is enforced on the next call that touches the sandbox and by client.reap(), not by a timer.
  nativeExpiry: false,
  snapshotFilesystemOnly: true,
} as const;
