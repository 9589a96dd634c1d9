import type { CapabilityFlags } from "../capabilities/capability-flags.js";
import type { CapabilityMap } from "../capabilities/capability-names.js";
import type { SandboxErrorCode } from "../errors/error-codes.js";
import type { DirEntry, FileInfo, WatchEvent } from "./files-types.js";
import type { EgressPolicy, ListFilter, SandboxSpec, SandboxState, SpecField } from "./sandbox-spec.js";

/**
 * The sandbox a driver hands back from `doCreate`/`doConnect` and receives in every later call.
 * `id` is the provider's native id (without the `"<provider>:"` prefix); `native` is whatever the driver
 * wants to keep (a container object, an SDK instance) and is what `sandbox.raw()` returns.
 */
export interface DriverSandbox<TNative = unknown> {
  readonly id: string;
  readonly native: TNative;
  /**
   * Where the core's emulations keep this sandbox's state, when that differs from sandbox to sandbox
   * (sandboxes that share one filesystem, such as unisolated local ones); overrides the provider's
   * `emulationStateDir`.
   */
  readonly emulationStateDir?: string | undefined;
}

/** Passed to every driver call: abort it when `signal` fires, and reject with an `Aborted`/`Timeout` error. */
export interface DriverCallOptions {
  readonly signal: AbortSignal;
}

/** What a driver reports about a sandbox. */
export interface DriverSandboxInfo {
  /** Native id. */
  id: string;
  /** Live state, read from the provider at the time of the call. */
  state: SandboxState;
  /** Labels as stored by the provider. */
  metadata: Record<string, string>;
  createdAt?: Date | undefined;
  expiresAt?: Date | undefined;
  /** The provider's own description, unmodified. */
  raw?: unknown;
  /**
   * Set when part of this sandbox's description could not be read (a listing goes on without it rather
   * than failing as a whole): the fields left out or unsure, and why.
   */
  partial?: PartialInfo | undefined;
}

/** What a listing could not read about one sandbox. */
export interface PartialInfo {
  /** The fields that are missing or may be wrong, e.g. `["expiresAt"]`. */
  readonly fields: readonly string[];
  /** The error code of the failed read (`Timeout`, `Provider`...). */
  readonly code: SandboxErrorCode;
  /** Why, in words. */
  readonly reason: string;
}

/** A command: a shell snippet run by `sh -c`, or argv executed without a shell. */
export type DriverCommand = { readonly shell: string } | { readonly argv: readonly string[] };

/** One exec call as the core hands it to a driver. */
export interface DriverExecRequest extends DriverCallOptions {
  readonly command: DriverCommand;
  /** Only set when `flags.perCommandEnvCwd` is true; otherwise the core put it into the command (E1). */
  readonly cwd?: string | undefined;
  /** Only set when `flags.perCommandEnvCwd` is true; keys are already validated. */
  readonly env?: Readonly<Record<string, string>> | undefined;
  /** Bytes to feed to stdin, then close it. A stream only when the `stdin` capability is native. */
  readonly stdin?: Uint8Array | ReadableStream<Uint8Array> | undefined;
  /** User to run as, when the provider supports it. */
  readonly user?: string | undefined;
}

/** Output callbacks of a streaming exec; chunks are raw bytes (or text where the provider only has text). */
export interface DriverOutputCallbacks {
  onStdout(chunk: Uint8Array | string): void;
  onStderr(chunk: Uint8Array | string): void;
}

/** How a command ended. `exitCode` is omitted only by providers with `flags.exitCodeNative: false`. */
export interface DriverExit {
  exitCode?: number | undefined;
  /** Name of the signal that ended the command, e.g. `"SIGKILL"`. */
  signal?: string | undefined;
}

/** The result of the buffered exec primitive. */
export interface DriverExecResult extends DriverExit {
  stdout: Uint8Array | string;
  stderr: Uint8Array | string;
}

/** A background process started or re-attached by the driver. */
export interface DriverProcess {
  readonly pid: number;
  /** Resolves when the process ends. */
  wait(): Promise<DriverExit>;
  /** Signals the process and its whole tree. */
  kill(signal?: string): Promise<void>;
  /** Writes to stdin (requires the `stdin` capability). */
  writeStdin?(data: Uint8Array): Promise<void>;
  /** Closes stdin. */
  closeStdin?(): Promise<void>;
}

/** A process as listed by `commands.list()`. */
export interface ProcessInfo {
  pid: number;
  command: string;
  running: boolean;
  exitCode?: number | undefined;
}

/** An interactive terminal. */
export interface DriverPty {
  readonly pid: number;
  write(data: Uint8Array | string): Promise<void>;
  resize(cols: number, rows: number): Promise<void>;
  kill(): Promise<void>;
  wait(): Promise<DriverExit>;
}

/** Options for opening a pty. */
export interface DriverPtyRequest extends DriverCallOptions {
  readonly cols: number;
  readonly rows: number;
  readonly cwd?: string | undefined;
  readonly env?: Readonly<Record<string, string>> | undefined;
  readonly command?: string | undefined;
  onData(data: Uint8Array): void;
}

/** A URL that reaches a port inside the sandbox. */
export interface PortInfo {
  port: number;
  url: string;
  /** Required to reach a private URL (`privatePreview`). */
  token?: string | undefined;
}

/** A snapshot reference. */
export interface SnapshotRef {
  id: string;
  name?: string | undefined;
  createdAt: Date;
}

/** Result of running code (`codeInterpreter`). */
export interface CodeRunResult {
  /** Rich results (text/plain, image/png, ...), keyed by MIME type. */
  results: Record<string, string>[];
  logs: { stdout: string; stderr: string };
  error?: { name: string; message: string; traceback?: string | undefined } | undefined;
}

/** SSH access credentials (`ssh`). */
export interface SshAccess {
  host: string;
  port: number;
  user: string;
  /** A password, token or private key, as the provider issues it. */
  credential: string;
  expiresAt?: Date | undefined;
}

/** Resource usage at one moment (`metrics`). */
export interface SandboxMetrics {
  cpuPercent?: number | undefined;
  memoryBytes?: number | undefined;
  memoryLimitBytes?: number | undefined;
  diskBytes?: number | undefined;
  at: Date;
}

/**
 * The driver methods of a provider. `do`-prefixed so users never call them by accident: users call the
 * `Sandbox` facade, which validates, checks capabilities, emulates and maps errors, then delegates here.
 *
 * Required: `doCreate`, `doConnect`, `doDestroy`, `doGetInfo`, `doExec`. Everything else is optional; a
 * capability declared `native` must have its methods (the conformance `manifest` case checks this).
 */
export interface ProviderDriver<TNative = unknown> {
  /** Creates a sandbox and returns once it can run commands. */
  doCreate(spec: SandboxSpec, options: DriverCallOptions): Promise<DriverSandbox<TNative>>;
  /** Attaches to an existing sandbox; throws `NotFound` when there is none with that native id. */
  doConnect(id: string, options: DriverCallOptions): Promise<DriverSandbox<TNative>>;
  /** Destroys the sandbox; resolves (does not throw) when it is already gone. */
  doDestroy(sandbox: DriverSandbox<TNative>, options: DriverCallOptions): Promise<void>;
  /** Reads live state. */
  doGetInfo(sandbox: DriverSandbox<TNative>, options: DriverCallOptions): Promise<DriverSandboxInfo>;
  /** The one required exec primitive: run to completion, return buffered output. */
  doExec(sandbox: DriverSandbox<TNative>, request: DriverExecRequest): Promise<DriverExecResult>;

  // exec (streaming, background, killProcess, stdin)
  /** `streaming`: calls back with output chunks as they are produced. */
  doExecStream?(
    sandbox: DriverSandbox<TNative>,
    request: DriverExecRequest & DriverOutputCallbacks,
  ): Promise<DriverExit>;
  /** `background`: starts a detached process that survives the caller. */
  doSpawn?(
    sandbox: DriverSandbox<TNative>,
    request: DriverExecRequest & DriverOutputCallbacks,
  ): Promise<DriverProcess>;
  /** `background`: lists processes started with `doSpawn`. */
  doListProcesses?(sandbox: DriverSandbox<TNative>, options: DriverCallOptions): Promise<ProcessInfo[]>;
  /** `background`: re-attaches to a spawned process; replays retained output first. */
  doConnectProcess?(
    sandbox: DriverSandbox<TNative>,
    pid: number,
    request: DriverCallOptions & DriverOutputCallbacks,
  ): Promise<DriverProcess>;
  /** `killProcess`: signals a process and its whole tree. */
  doKillProcess?(
    sandbox: DriverSandbox<TNative>,
    pid: number,
    signal: string,
    options: DriverCallOptions,
  ): Promise<void>;
  /** `pty`. */
  doCreatePty?(sandbox: DriverSandbox<TNative>, request: DriverPtyRequest): Promise<DriverPty>;

  // files (each emulated over exec when absent)
  doReadFile?(sandbox: DriverSandbox<TNative>, path: string, options: DriverCallOptions): Promise<Uint8Array>;
  doWriteFile?(
    sandbox: DriverSandbox<TNative>,
    path: string,
    data: Uint8Array,
    options: DriverCallOptions & { mode?: number | undefined },
  ): Promise<void>;
  /** `filesUpload`: streamed download. */
  doReadFileStream?(
    sandbox: DriverSandbox<TNative>,
    path: string,
    options: DriverCallOptions,
  ): Promise<ReadableStream<Uint8Array>>;
  /** `filesUpload`: streamed upload. */
  doWriteFileStream?(
    sandbox: DriverSandbox<TNative>,
    path: string,
    data: ReadableStream<Uint8Array>,
    options: DriverCallOptions & { mode?: number | undefined },
  ): Promise<void>;
  doListFiles?(
    sandbox: DriverSandbox<TNative>,
    path: string,
    options: DriverCallOptions,
  ): Promise<DirEntry[]>;
  doStat?(sandbox: DriverSandbox<TNative>, path: string, options: DriverCallOptions): Promise<FileInfo>;
  doMkdir?(
    sandbox: DriverSandbox<TNative>,
    path: string,
    options: DriverCallOptions & { recursive: boolean },
  ): Promise<void>;
  doRemove?(
    sandbox: DriverSandbox<TNative>,
    path: string,
    options: DriverCallOptions & { recursive: boolean },
  ): Promise<void>;
  doRename?(
    sandbox: DriverSandbox<TNative>,
    from: string,
    to: string,
    options: DriverCallOptions,
  ): Promise<void>;
  /** `filesWatch`. */
  doWatch?(
    sandbox: DriverSandbox<TNative>,
    path: string,
    options: DriverCallOptions & { recursive: boolean; onEvent(event: WatchEvent): void },
  ): Promise<{ close(): Promise<void> }>;

  // lifecycle
  /** `list`: the core applies the filter again, so a provider may filter coarsely. */
  doList?(filter: ListFilter, options: DriverCallOptions): AsyncIterable<DriverSandboxInfo>;
  /** `stop`. */
  doStop?(sandbox: DriverSandbox<TNative>, options: DriverCallOptions): Promise<void>;
  /** `pause`. */
  doPause?(sandbox: DriverSandbox<TNative>, options: DriverCallOptions): Promise<void>;
  /** `stop` / `pause`: brings a stopped or paused sandbox back. */
  doResume?(sandbox: DriverSandbox<TNative>, options: DriverCallOptions): Promise<void>;
  /** `setTimeout`. */
  doSetTimeout?(sandbox: DriverSandbox<TNative>, ttlMs: number, options: DriverCallOptions): Promise<void>;
  /** `metrics`. */
  doMetrics?(sandbox: DriverSandbox<TNative>, options: DriverCallOptions): Promise<SandboxMetrics>;

  // network
  /** `exposePort` (`privatePreview` when `private` is honoured). */
  doExposePort?(
    sandbox: DriverSandbox<TNative>,
    port: number,
    options: DriverCallOptions & { private: boolean },
  ): Promise<PortInfo>;
  doListPorts?(sandbox: DriverSandbox<TNative>, options: DriverCallOptions): Promise<PortInfo[]>;
  doUnexposePort?(sandbox: DriverSandbox<TNative>, port: number, options: DriverCallOptions): Promise<void>;
  /** `proxiedFetch`. */
  doFetchPort?(sandbox: DriverSandbox<TNative>, port: number, request: Request): Promise<Response>;
  /** `egressControl`. */
  doSetEgress?(
    sandbox: DriverSandbox<TNative>,
    policy: EgressPolicy,
    options: DriverCallOptions,
  ): Promise<void>;
  /** `ssh`. */
  doGetSshAccess?(sandbox: DriverSandbox<TNative>, options: DriverCallOptions): Promise<SshAccess>;

  // state
  /** `snapshot`. */
  doCreateSnapshot?(
    sandbox: DriverSandbox<TNative>,
    options: DriverCallOptions & { name?: string | undefined },
  ): Promise<SnapshotRef>;
  doRestoreSnapshot?(
    sandbox: DriverSandbox<TNative>,
    ref: SnapshotRef,
    options: DriverCallOptions,
  ): Promise<void>;
  doListSnapshots?(sandbox: DriverSandbox<TNative>, options: DriverCallOptions): Promise<SnapshotRef[]>;
  doDeleteSnapshot?(
    sandbox: DriverSandbox<TNative>,
    ref: SnapshotRef,
    options: DriverCallOptions,
  ): Promise<void>;
  /** `fork`: independent copies of a running sandbox. */
  doFork?(
    sandbox: DriverSandbox<TNative>,
    options: DriverCallOptions & { count: number },
  ): Promise<DriverSandbox<TNative>[]>;

  // code
  /** `codeInterpreter` (`statefulKernel` when `context` keeps state). */
  doRunCode?(
    sandbox: DriverSandbox<TNative>,
    code: string,
    options: DriverCallOptions & { language?: string | undefined; context?: string | undefined },
  ): Promise<CodeRunResult>;

  /** Releases clients, sockets, timers. Called by `client.dispose()`. */
  doDispose?(): Promise<void>;
}

/** The declaration part of a provider. */
export interface ProviderDeclaration<TCaps extends CapabilityMap = CapabilityMap> {
  /** The specification version this provider implements. */
  readonly specificationVersion: "v1";
  /** Short lowercase name, used as the id prefix: `"docker"` gives ids like `"docker:3f2a..."`. */
  readonly name: string;
  /** The literal capability declaration. */
  readonly capabilities: TCaps;
  /** Behaviour flags. */
  readonly flags: CapabilityFlags;
  /** Spec fields the provider honours at create; any other field set by a user is a `Validation` error. */
  readonly honours: readonly SpecField[];
  /** Directory commands start in, when known; emulations (tarball snapshots) use it. */
  readonly workdir?: string | undefined;
  /** Where the core's emulations keep their state inside the sandbox (default `/tmp/.sbox`). */
  readonly emulationStateDir?: string | undefined;
}

/** A provider: its declaration plus its driver methods. Build one with `defineProvider`. */
export type SandboxProvider<
  TCaps extends CapabilityMap = CapabilityMap,
  TNative = unknown,
> = ProviderDeclaration<TCaps> & ProviderDriver<TNative>;
