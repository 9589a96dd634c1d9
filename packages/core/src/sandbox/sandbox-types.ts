import type { CapabilityFlags } from "../capabilities/capability-flags.js";
import type { CapabilityLevel, CapabilityMap, CapabilityName } from "../capabilities/capability-names.js";
import type { DirEntry, FileInfo, WatchEvent } from "../spec/files-types.js";
import type {
  CodeRunResult,
  PartialInfo,
  PortInfo,
  ProcessInfo,
  SandboxMetrics,
  SnapshotRef,
  SshAccess,
} from "../spec/provider-spec.js";
import type { EgressPolicy, SandboxState } from "../spec/sandbox-spec.js";
import type { KnownMethods, PortFetch, PortsApiOf, PortUnexpose, UnknownMethods } from "./method-gates.js";

/** The effective capabilities of a client or sandbox: the map after emulation, plus the flags. */
export interface Capabilities<TCaps extends CapabilityMap = CapabilityMap> {
  readonly map: TCaps;
  readonly flags: CapabilityFlags;
}

/** Options of `commands.run()` and `commands.spawn()`. */
export interface RunOptions {
  /** Working directory; relative paths resolve against the sandbox workdir. */
  cwd?: string | undefined;
  /** Extra environment variables; keys must match `[A-Za-z_][A-Za-z0-9_]*`. */
  env?: Readonly<Record<string, string>> | undefined;
  /** Kill the whole process tree and reject with `Timeout` after this many milliseconds. */
  timeoutMs?: number | undefined;
  /** Data for stdin; a stream requires the `stdin` capability. */
  stdin?: string | Uint8Array | ReadableStream<Uint8Array> | undefined;
  /** User to run as, where the provider supports it. */
  user?: string | undefined;
  /** Kill the process tree and reject with `Aborted` when this fires. */
  signal?: AbortSignal | undefined;
  /** Called with each stdout chunk as it arrives (UTF-8 decoded across chunk boundaries). */
  onStdout?: ((chunk: string) => void) | undefined;
  /** Called with each stderr chunk as it arrives. */
  onStderr?: ((chunk: string) => void) | undefined;
  /**
   * Keep stdout/stderr in the result (default true). Set false for very large outputs consumed through
   * callbacks or iteration, so memory stays bounded.
   */
  collectOutput?: boolean | undefined;
}

/** The outcome of a finished command. A non-zero exit code is data, never a throw. */
export interface ExecResult {
  stdout: string;
  stderr: string;
  exitCode: number;
  /** Signal name when the command was ended by a signal. */
  signal?: string | undefined;
  durationMs: number;
}

/** One event of a running command, in order. */
export type OutputEvent =
  | { type: "stdout"; data: string }
  | { type: "stderr"; data: string }
  | { type: "exit"; exitCode: number; signal?: string | undefined };

/** A running command: await it for the result, iterate it for events as they happen. */
export interface CommandHandle extends PromiseLike<ExecResult>, AsyncIterable<OutputEvent> {
  /**
   * Signals the command's whole process tree: without a signal SIGTERM, then SIGKILL after
   * `options.graceMs` (default 3000 ms) if it is still running; with a signal exactly that one (unless
   * `graceMs` is given too). The handle then settles with the command's own exit: what a SIGTERM handler
   * prints and the exit code it chooses, or `signal` and 128+n when the signal ended it. Resolves once the
   * last signal was sent; an invalid signal or `graceMs` rejects with `Validation`.
   */
  kill(signal?: string, options?: KillOptions): Promise<void>;
}

/** Options of `kill()`. */
export interface KillOptions {
  /**
   * How long to wait after the first signal before sending SIGKILL, if the process is still there.
   * Default 3000 ms when no signal is named (SIGTERM first); with a named signal there is no SIGKILL
   * unless this is given. 0 sends SIGKILL right after the first signal.
   */
  graceMs?: number | undefined;
}

/** A background process. */
export interface SandboxProcess {
  readonly pid: number;
  /** Stdout chunks from the start (or from attach time where the provider keeps none). */
  readonly stdout: AsyncIterable<string>;
  readonly stderr: AsyncIterable<string>;
  /** Resolves with the exit when the process ends. */
  wait(): Promise<{ exitCode: number; signal?: string | undefined }>;
  /**
   * Signals the process and its whole tree: without a signal SIGTERM, then SIGKILL after
   * `options.graceMs` (default 3000 ms) if it is still there; with a signal only that one (unless
   * `graceMs` is given). Resolves once the process ended or the last signal was sent.
   */
  kill(signal?: string, options?: KillOptions): Promise<void>;
  writeStdin(data: string | Uint8Array): Promise<void>;
  closeStdin(): Promise<void>;
}

/** `sandbox.commands`. */
export interface CommandsApi {
  /** Runs a command; `string[]` is argv (no shell). */
  run(command: string | readonly string[], options?: RunOptions): CommandHandle;
  /** Starts a background process (`background`). */
  spawn(
    command: string | readonly string[],
    options?: Omit<RunOptions, "timeoutMs">,
  ): Promise<SandboxProcess>;
  /** Lists background processes (`background`). */
  list(): Promise<ProcessInfo[]>;
  /** Re-attaches to a background process, also from another client or OS process (`background`). */
  connect(pid: number): Promise<SandboxProcess>;
  /**
   * Signals a process and its whole tree (`killProcess`): without a signal SIGTERM, then SIGKILL after
   * `options.graceMs` (default 3000 ms) if it is still running; with a signal only that one (unless
   * `graceMs` is given).
   */
  kill(pid: number, signal?: string, options?: KillOptions): Promise<void>;
}

/** One file for `files.writeMany`. */
export interface FileToWrite {
  path: string;
  data: string | Uint8Array | ReadableStream<Uint8Array>;
  /** Permission bits, e.g. `0o755`. */
  mode?: number | undefined;
}

/** `sandbox.files`: always present, emulated over exec where the provider has no file API. */
export interface FilesApi {
  /** Writes a file, creating parent directories. */
  write(
    path: string,
    data: string | Uint8Array | ReadableStream<Uint8Array>,
    options?: { mode?: number | undefined },
  ): Promise<void>;
  /**
   * Writes many files in one call, one after another, each streamed like `write` (parent directories
   * created). Takes an array or any (async) iterable of `{ path, data, mode? }`, so files can be produced
   * as they are written; a failure names the file and how many were written before it.
   */
  writeMany(files: Iterable<FileToWrite> | AsyncIterable<FileToWrite>): Promise<void>;
  /** Reads a file; `NotFound` when missing. */
  read(path: string): Promise<Uint8Array>;
  /** Reads a file as UTF-8. */
  readText(path: string): Promise<string>;
  /** Streams a file, for files larger than memory. */
  readStream(path: string): ReadableStream<Uint8Array>;
  list(path: string): Promise<DirEntry[]>;
  stat(path: string): Promise<FileInfo>;
  /** True or false; any failure other than absence is thrown. */
  exists(path: string): Promise<boolean>;
  mkdir(path: string, options?: { recursive?: boolean | undefined }): Promise<void>;
  remove(path: string, options?: { recursive?: boolean | undefined }): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  /** Watches for changes (`filesWatch`). */
  watch(
    path: string,
    onEvent: (event: WatchEvent) => void,
    options?: { recursive?: boolean | undefined },
  ): Promise<{ close(): Promise<void> }>;
}

/**
 * `sandbox.ports` (`exposePort`) of a sandbox whose provider is not known more precisely. `unexpose` is
 * there only where the provider has it, `fetch` only where `proxiedFetch` is supported: undefined
 * otherwise, at runtime and in the type (a sandbox of a known provider has them typed exactly, see
 * `PortsApiOf`).
 */
export interface PortsApi {
  expose(port: number, options?: { private?: boolean | undefined }): Promise<PortInfo>;
  list(): Promise<PortInfo[]>;
  /** Stops exposing a port, where the provider can. */
  readonly unexpose?: PortUnexpose | undefined;
  /** Fetches from a port through the provider (`proxiedFetch`). */
  readonly fetch?: PortFetch | undefined;
}

/** `sandbox.snapshots` (`snapshot`). */
export interface SnapshotsApi {
  create(options?: { name?: string | undefined }): Promise<SnapshotRef>;
  restore(ref: SnapshotRef): Promise<void>;
  list(): Promise<SnapshotRef[]>;
  delete(ref: SnapshotRef): Promise<void>;
}

/** `sandbox.network` (`egressControl`). */
export interface NetworkApi {
  setEgress(policy: EgressPolicy): Promise<void>;
}

/** An interactive terminal. */
export interface PtyHandle {
  readonly pid: number;
  write(data: string | Uint8Array): Promise<void>;
  resize(cols: number, rows: number): Promise<void>;
  kill(): Promise<void>;
  wait(): Promise<{ exitCode: number; signal?: string | undefined }>;
}

/** `sandbox.pty` (`pty`). */
export interface PtyApi {
  create(options: {
    cols: number;
    rows: number;
    cwd?: string | undefined;
    env?: Readonly<Record<string, string>> | undefined;
    command?: string | undefined;
    onData(data: Uint8Array): void;
  }): Promise<PtyHandle>;
}

/** `sandbox.code` (`codeInterpreter`). */
export interface CodeApi {
  run(
    code: string,
    options?: { language?: string | undefined; context?: string | undefined },
  ): Promise<CodeRunResult>;
}

/** `sandbox.ssh` (`ssh`). */
export interface SshApi {
  access(): Promise<SshAccess>;
}

/** What `getInfo()` and `client.list()` report. */
export interface SandboxInfo {
  /** `"<provider>:<native id>"`. */
  id: string;
  provider: string;
  /** Live state, never cached. */
  state: SandboxState;
  metadata: Record<string, string>;
  createdAt?: Date | undefined;
  expiresAt?: Date | undefined;
  /** The provider's own description. */
  raw: unknown;
  /** Set by `list()` when part of this sandbox could not be read: what is missing, and why. */
  partial?: PartialInfo | undefined;
}

/** Which gated namespace each capability opens. */
export interface GatedNamespaces {
  ports: PortsApi;
  snapshots: SnapshotsApi;
  fork: (options?: { count?: number | undefined }) => Promise<Sandbox[]>;
  network: NetworkApi;
  pty: PtyApi;
  code: CodeApi;
  ssh: SshApi;
}

/** Capability that opens each gated namespace. */
export interface NamespaceCapability {
  ports: "exposePort";
  snapshots: "snapshot";
  fork: "fork";
  network: "egressControl";
  pty: "pty";
  code: "codeInterpreter";
  ssh: "ssh";
}

/** `undefined` when the level is only `unsupported`, the API when never, and `API | undefined` when it may be either. */
export type Gate<TLevel extends CapabilityLevel, TApi> = [TLevel] extends ["unsupported"]
  ? undefined
  : "unsupported" extends TLevel
    ? TApi | undefined
    : TApi;

/**
 * The gated namespaces of a sandbox with capability map `TCaps`; `ports` is gated method by method too
 * (`PortsApiOf`), by the map and by what the provider's type says of its methods (`TMethods`).
 */
export type GatedApis<TCaps extends CapabilityMap, TMethods extends KnownMethods = UnknownMethods> = {
  readonly [K in keyof GatedNamespaces]: K extends "ports"
    ? Gate<TCaps["exposePort"], PortsApiOf<TCaps, TMethods>>
    : Gate<TCaps[NamespaceCapability[K]], GatedNamespaces[K]>;
};

/** The namespace opened by capability `C`, if any. */
export type NamespaceOf<C extends CapabilityName> = {
  [K in keyof NamespaceCapability]: NamespaceCapability[K] extends C ? K : never;
}[keyof NamespaceCapability];

/**
 * A sandbox: one API whatever the provider. Gated namespaces are typed by the provider's capability map,
 * and `ports` method by method by what the provider's type says of its optional methods (`TMethods`).
 */
export type Sandbox<
  TCaps extends CapabilityMap = CapabilityMap,
  TMethods extends KnownMethods = UnknownMethods,
> = SandboxBase<TCaps> & GatedApis<TCaps, TMethods>;

/**
 * The always-present part of a sandbox. `await using sandbox = await client.create()` destroys it when the
 * block ends (`Symbol.asyncDispose` calls `destroy()`).
 */
export interface SandboxBase<TCaps extends CapabilityMap = CapabilityMap> extends AsyncDisposable {
  /** `"<provider>:<native id>"`, accepted by `client.connect`. */
  readonly id: string;
  readonly provider: string;
  readonly capabilities: Capabilities<TCaps>;
  /** Type guard: true when the capability is native or emulated; narrows its namespace to defined. */
  can<C extends CapabilityName>(
    capability: C,
  ): this is { readonly [K in NamespaceOf<C>]: GatedNamespaces[K] };
  getInfo(options?: { signal?: AbortSignal | undefined }): Promise<SandboxInfo>;
  setTimeout(ttlMs: number): Promise<void>;
  stop(): Promise<void>;
  pause(): Promise<void>;
  resume(): Promise<void>;
  /** Destroys the sandbox; calling it again is harmless. */
  destroy(): Promise<void>;
  /** Destroys the sandbox: what `await using` calls at the end of its block. */
  [Symbol.asyncDispose](): Promise<void>;
  metrics(): Promise<SandboxMetrics>;
  /** The native SDK object, as an escape hatch. */
  raw(): unknown;
  readonly commands: CommandsApi;
  readonly files: FilesApi;
}
