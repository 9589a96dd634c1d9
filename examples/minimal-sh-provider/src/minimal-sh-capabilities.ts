/**
 * What the minimal sh provider declares. `list` and `setTimeout` are its own (it reads and writes its
 * records; `client.reap()` destroys a sandbox whose time ran out, since nothing here runs a timer);
 * everything the core can emulate over the one exec primitive is `emulated`; the rest is honestly
 * `unsupported`. `stdin` is native because the exec primitive takes stdin bytes (and streams).
 */
export const minimalShCapabilities = {
  list: "native",
  stop: "unsupported",
  pause: "unsupported",
  setTimeout: "native",
  streaming: "emulated",
  background: "emulated",
  killProcess: "emulated",
  stdin: "native",
  pty: "unsupported",
  filesWatch: "emulated",
  filesUpload: "emulated",
  codeInterpreter: "unsupported",
  statefulKernel: "unsupported",
  exposePort: "unsupported",
  privatePreview: "unsupported",
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
