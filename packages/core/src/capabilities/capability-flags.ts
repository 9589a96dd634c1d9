/**
 * How a provider makes preview URLs reachable: a per-port subdomain, a tunnel, only ports declared at
 * create time, the sandbox's own IP, the host's loopback, or not at all.
 */
export type PreviewModel = "subdomain" | "tunnel" | "declaredPorts" | "ip" | "localhost" | "none";

/** Behaviour flags that qualify the capability map. Every flag is read by the core or the conformance kit. */
export interface CapabilityFlags {
  /** The exec primitive honours `cwd` and `env` itself; when false the core prefixes the command (E1). */
  readonly perCommandEnvCwd: boolean;
  /** The exec primitive reports the exit code; when false the core appends a random marker (E2). */
  readonly exitCodeNative: boolean;
  /** `stop()` keeps the sandbox filesystem, so `resume()` finds every file again. */
  readonly preservesDiskOnStop: boolean;
  /** `pause()` keeps memory and processes, so `resume()` continues running programs. */
  readonly preservesMemoryOnPause: boolean;
  /** How exposed ports are reached. */
  readonly previewModel: PreviewModel;
  /** The provider enforces `ttlMs`/`setTimeout` itself; when false `client.reap()` enforces it. */
  readonly nativeExpiry: boolean;
  /** Snapshots and forks carry the filesystem only (no memory, no processes). */
  readonly snapshotFilesystemOnly: boolean;
  /**
   * Another process inside the sandbox can change the exit code reported for a streamed or background
   * command (it comes from a record that process can write). A provider declares it for its own methods;
   * the core sets it where its emulations (E3, E4) run over an exec that takes no stdin, which leaves no
   * channel for the supervisor's secret. Reported exit codes are otherwise proven, see the core README.
   */
  readonly exitCodeForgeable?: boolean | undefined;
}
