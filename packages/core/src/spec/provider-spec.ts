import type { CapabilityFlags } from "../capabilities/capability-flags.js";
import type { CapabilityMap } from "../capabilities/capability-names.js";
import type { SandboxErrorCode } from "../errors/error-codes.js";
import type { SandboxError } from "../errors/sandbox-error.js";
import type { DirEntry, FileInfo, WatchEvent } from "./files-types.js";
import type { EgressPolicy, ListFilter, SandboxSpec, SandboxState, SpecField } from "./sandbox-spec.js";

/**
 * The sandbox a driver hands back from `doCreate`/`doConnect` and receives in every later call.
 * `id` is the provider's native id (without the `"<provider>:"` prefix); `native` is whatever the driver
 * wants to keep (a container object, an SDK instance) and is what `sandbox.raw()` returns.
 */
export interface DriverSandboxV1<TNative = unknown> {
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
export interface DriverCallOptionsV1 {
  readonly signal: AbortSignal;
}

/** What a driver reports about a sandbox. */
export interface DriverSandboxInfoV1 {
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
export type DriverCommandV1 = { readonly shell: string } | { readonly argv: readonly string[] };

/** One exec call as the core hands it to a driver. */
export interface DriverExecRequestV1 extends DriverCallOptionsV1 {
  readonly command: DriverCommandV1;
  /** Only set when `flags.perCommandEnvCwd` is true; otherwise the core put it into the command (E1). */
  readonly cwd?: string | undefined;
  /** Only set when `flags.perCommandEnvCwd` is true; keys are already validated. */
  readonly env?: Readonly<Record<string, string>> | undefined;
  /** Bytes to feed to stdin, then close it. A stream only when the `stdin` capability is native. */
  readonly stdin?: Uint8Array | ReadableStream<Uint8Array> | undefined;
  /** User to run as, when the provider supports it. */
  readonly user?: string | undefined;
  /**
   * Present when the user may signal the command while it runs (`handle.kill(signal)`). A provider that
   * declares {@link ProviderDeclarationV1.execSignals} calls it once, as soon as the command runs, with the
   * means to signal the command's whole process tree. The core sends `kill()`'s signals through it and
   * waits for the exec to end as usual, so what a signal handler prints and the exit code it chooses reach
   * the caller. Others may ignore it: the core then signals the command itself where it can.
   */
  readonly onStarted?: ((control: DriverExecControlV1) => void) | undefined;
}

/** A running exec, as a driver hands it to `request.onStarted`. */
export interface DriverExecControlV1 {
  /**
   * Sends `signal` (a name such as `"SIGTERM"`) to the command's whole process tree, including processes
   * that left its process group where the provider can find them. Resolves once the signal was sent, not
   * once the command ended; a command that already ended is no error.
   */
  signal(signal: string): Promise<void>;
}

/** Output callbacks of a streaming exec; chunks are raw bytes (or text where the provider only has text). */
export interface DriverOutputCallbacksV1 {
  onStdout(chunk: Uint8Array | string): void;
  onStderr(chunk: Uint8Array | string): void;
  /**
   * Back-pressure, for drivers that can pause where their output comes from (a socket, a stream). After
   * delivering output, call it: `undefined` means go on; a promise means the consumer is behind (a slow
   * `for await` loop), so read nothing more from the source until it settles. Memory then stays bounded
   * whatever the output size. A driver that never calls it stays correct: a slow consumer's output is only
   * kept in memory meanwhile. Absent when no consumer can fall behind.
   */
  readonly ready?: (() => PromiseLike<void> | undefined) | undefined;
}

/** How a command ended. `exitCode` is omitted only by providers with `flags.exitCodeNative: false`. */
export interface DriverExitV1 {
  exitCode?: number | undefined;
  /** Name of the signal that ended the command, e.g. `"SIGKILL"`. */
  signal?: string | undefined;
}

/** The result of the buffered exec primitive. */
export interface DriverExecResultV1 extends DriverExitV1 {
  /**
   * A `Uint8Array` holds the command's raw bytes (the core's file emulation then moves file contents
   * unencoded); a string is text, for providers whose exec only has text.
   */
  stdout: Uint8Array | string;
  stderr: Uint8Array | string;
}

/** A background process started or re-attached by the driver. */
export interface DriverProcessV1 {
  readonly pid: number;
  /** Resolves when the process ends. */
  wait(): Promise<DriverExitV1>;
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
export interface DriverPtyV1 {
  readonly pid: number;
  write(data: Uint8Array | string): Promise<void>;
  resize(cols: number, rows: number): Promise<void>;
  kill(): Promise<void>;
  wait(): Promise<DriverExitV1>;
}

/** Options for opening a pty. */
export interface DriverPtyRequestV1 extends DriverCallOptionsV1 {
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
export interface ProviderDriverV1<TNative = unknown> {
  /** Creates a sandbox and returns once it can run commands. */
  doCreate(spec: SandboxSpec, options: DriverCallOptionsV1): Promise<DriverSandboxV1<TNative>>;
  /** Attaches to an existing sandbox; throws `NotFound` when there is none with that native id. */
  doConnect(id: string, options: DriverCallOptionsV1): Promise<DriverSandboxV1<TNative>>;
  /** Destroys the sandbox; resolves (does not throw) when it is already gone. */
  doDestroy(sandbox: DriverSandboxV1<TNative>, options: DriverCallOptionsV1): Promise<void>;
  /** Reads live state. */
  doGetInfo(sandbox: DriverSandboxV1<TNative>, options: DriverCallOptionsV1): Promise<DriverSandboxInfoV1>;
  /** The one required exec primitive: run to completion, return buffered output. */
  doExec(sandbox: DriverSandboxV1<TNative>, request: DriverExecRequestV1): Promise<DriverExecResultV1>;

  // exec (streaming, background, killProcess, stdin)
  /** `streaming`: calls back with output chunks as they are produced. */
  doExecStream?(
    sandbox: DriverSandboxV1<TNative>,
    request: DriverExecRequestV1 & DriverOutputCallbacksV1,
  ): Promise<DriverExitV1>;
  /** `background`: starts a detached process that survives the caller. */
  doSpawn?(
    sandbox: DriverSandboxV1<TNative>,
    request: DriverExecRequestV1 & DriverOutputCallbacksV1,
  ): Promise<DriverProcessV1>;
  /** `background`: lists processes started with `doSpawn`. */
  doListProcesses?(sandbox: DriverSandboxV1<TNative>, options: DriverCallOptionsV1): Promise<ProcessInfo[]>;
  /** `background`: re-attaches to a spawned process; replays retained output first. */
  doConnectProcess?(
    sandbox: DriverSandboxV1<TNative>,
    pid: number,
    request: DriverCallOptionsV1 & DriverOutputCallbacksV1,
  ): Promise<DriverProcessV1>;
  /** `killProcess`: signals a process and its whole tree. */
  doKillProcess?(
    sandbox: DriverSandboxV1<TNative>,
    pid: number,
    signal: string,
    options: DriverCallOptionsV1,
  ): Promise<void>;
  /** `pty`. */
  doCreatePty?(sandbox: DriverSandboxV1<TNative>, request: DriverPtyRequestV1): Promise<DriverPtyV1>;

  // files (each emulated over exec when absent)
  //
  // Every path a file method receives is absolute and normalised: the core resolves a relative path against
  // the sandbox's working directory (the declared `workdir`, else what `pwd` prints there), collapses
  // repeated slashes, drops `.` components and trailing slashes, and resolves `..` lexically (as
  // `resolveSandboxPath` does). A provider never resolves paths itself. A path that does not exist rejects
  // with `NotFound` (for `doMkdir`: a missing parent without `recursive`; for `doRename`: a missing source);
  // every other failure (not a directory, permission, no space) rejects with its own code, never `NotFound`.
  /** Reads a whole regular file, following symlinks; a directory is `Validation`. */
  doReadFile?(
    sandbox: DriverSandboxV1<TNative>,
    path: string,
    options: DriverCallOptionsV1,
  ): Promise<Uint8Array>;
  /**
   * Writes a whole file, creating missing parent directories; an existing file is replaced and keeps its
   * permission bits unless `mode` is given. Writing onto a directory is `Validation`.
   */
  doWriteFile?(
    sandbox: DriverSandboxV1<TNative>,
    path: string,
    data: Uint8Array,
    options: DriverCallOptionsV1 & { mode?: number | undefined },
  ): Promise<void>;
  /** `filesUpload`: streamed download. */
  doReadFileStream?(
    sandbox: DriverSandboxV1<TNative>,
    path: string,
    options: DriverCallOptionsV1,
  ): Promise<ReadableStream<Uint8Array>>;
  /** `filesUpload`: streamed upload. */
  doWriteFileStream?(
    sandbox: DriverSandboxV1<TNative>,
    path: string,
    data: ReadableStream<Uint8Array>,
    options: DriverCallOptionsV1 & { mode?: number | undefined },
  ): Promise<void>;
  /** One level of a directory, without `.` and `..`; symlinks are reported as symlinks, never followed. */
  doListFiles?(
    sandbox: DriverSandboxV1<TNative>,
    path: string,
    options: DriverCallOptionsV1,
  ): Promise<DirEntry[]>;
  /** Metadata of one path, of a symlink itself rather than its target. */
  doStat?(sandbox: DriverSandboxV1<TNative>, path: string, options: DriverCallOptionsV1): Promise<FileInfo>;
  /** Creates a directory; without `recursive` an existing one is `Conflict` and a missing parent `NotFound`. */
  doMkdir?(
    sandbox: DriverSandboxV1<TNative>,
    path: string,
    options: DriverCallOptionsV1 & { recursive: boolean },
  ): Promise<void>;
  /** Removes a file, symlink or directory; a non-empty directory without `recursive` is `Conflict`. */
  doRemove?(
    sandbox: DriverSandboxV1<TNative>,
    path: string,
    options: DriverCallOptionsV1 & { recursive: boolean },
  ): Promise<void>;
  /** Moves `from` to `to` (both absolute), replacing a file at `to`. */
  doRename?(
    sandbox: DriverSandboxV1<TNative>,
    from: string,
    to: string,
    options: DriverCallOptionsV1,
  ): Promise<void>;
  /** `filesWatch`. */
  doWatch?(
    sandbox: DriverSandboxV1<TNative>,
    path: string,
    options: DriverCallOptionsV1 & { recursive: boolean; onEvent(event: WatchEvent): void },
  ): Promise<{ close(): Promise<void> }>;

  // lifecycle
  /** `list`: the core applies the filter again, so a provider may filter coarsely. */
  doList?(filter: ListFilter, options: DriverCallOptionsV1): AsyncIterable<DriverSandboxInfoV1>;
  /** `stop`. */
  doStop?(sandbox: DriverSandboxV1<TNative>, options: DriverCallOptionsV1): Promise<void>;
  /** `pause`. */
  doPause?(sandbox: DriverSandboxV1<TNative>, options: DriverCallOptionsV1): Promise<void>;
  /** `stop` / `pause`: brings a stopped or paused sandbox back. */
  doResume?(sandbox: DriverSandboxV1<TNative>, options: DriverCallOptionsV1): Promise<void>;
  /** `setTimeout`. */
  doSetTimeout?(
    sandbox: DriverSandboxV1<TNative>,
    ttlMs: number,
    options: DriverCallOptionsV1,
  ): Promise<void>;
  /** `metrics`. */
  doMetrics?(sandbox: DriverSandboxV1<TNative>, options: DriverCallOptionsV1): Promise<SandboxMetrics>;

  // network
  /** `exposePort` (`privatePreview` when `private` is honoured). */
  doExposePort?(
    sandbox: DriverSandboxV1<TNative>,
    port: number,
    options: DriverCallOptionsV1 & { private: boolean },
  ): Promise<PortInfo>;
  doListPorts?(sandbox: DriverSandboxV1<TNative>, options: DriverCallOptionsV1): Promise<PortInfo[]>;
  doUnexposePort?(
    sandbox: DriverSandboxV1<TNative>,
    port: number,
    options: DriverCallOptionsV1,
  ): Promise<void>;
  /** `proxiedFetch`. */
  doFetchPort?(sandbox: DriverSandboxV1<TNative>, port: number, request: Request): Promise<Response>;
  /** `egressControl`. */
  doSetEgress?(
    sandbox: DriverSandboxV1<TNative>,
    policy: EgressPolicy,
    options: DriverCallOptionsV1,
  ): Promise<void>;
  /** `ssh`. */
  doGetSshAccess?(sandbox: DriverSandboxV1<TNative>, options: DriverCallOptionsV1): Promise<SshAccess>;

  // state
  /** `snapshot`. */
  doCreateSnapshot?(
    sandbox: DriverSandboxV1<TNative>,
    options: DriverCallOptionsV1 & { name?: string | undefined },
  ): Promise<SnapshotRef>;
  doRestoreSnapshot?(
    sandbox: DriverSandboxV1<TNative>,
    ref: SnapshotRef,
    options: DriverCallOptionsV1,
  ): Promise<void>;
  doListSnapshots?(sandbox: DriverSandboxV1<TNative>, options: DriverCallOptionsV1): Promise<SnapshotRef[]>;
  doDeleteSnapshot?(
    sandbox: DriverSandboxV1<TNative>,
    ref: SnapshotRef,
    options: DriverCallOptionsV1,
  ): Promise<void>;
  /** `fork`: independent copies of a running sandbox. */
  doFork?(
    sandbox: DriverSandboxV1<TNative>,
    options: DriverCallOptionsV1 & { count: number },
  ): Promise<DriverSandboxV1<TNative>[]>;

  // code
  /** `codeInterpreter` (`statefulKernel` when `context` keeps state). */
  doRunCode?(
    sandbox: DriverSandboxV1<TNative>,
    code: string,
    options: DriverCallOptionsV1 & { language?: string | undefined; context?: string | undefined },
  ): Promise<CodeRunResult>;

  /** Releases clients, sockets, timers. Called by `client.dispose()`. */
  doDispose?(): Promise<void>;
}

/** The declaration part of a provider. */
export interface ProviderDeclarationV1<TCaps extends CapabilityMap = CapabilityMap> {
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
  /**
   * What the buffered `doExec` takes as `request.stdin` (bytes the core hands it), when that is not what
   * the `stdin` capability implies: `"bytes"` any bytes (the default when `stdin` is native), `"text"` valid
   * UTF-8 only (the core then sends base64 text), `"none"` nothing (the default otherwise). The emulations
   * use it to move file data in large pieces instead of 64 KiB command lines, and to hand a command's
   * supervisor its secret (E3, E4) where no other process of the sandbox can read it.
   */
  readonly execStdin?: ExecStdinV1 | undefined;
  /**
   * `true` when `doExecStream` and `doExec` call `request.onStarted` with a way to signal the running
   * command (see {@link DriverExecRequestV1.onStarted}): `handle.kill()` then sends SIGTERM and, after
   * the grace period, SIGKILL natively. Otherwise the core reaches the command itself where it runs it
   * detached (E3: its process group); a command on the provider's own stream it cannot reach is ended by
   * aborting its exec (the driver's abort kill), and reported as ended by the signal asked for.
   */
  readonly execSignals?: boolean | undefined;
  /**
   * Credentials the provider holds: API keys, tokens, passwords in URLs, signatures of signed URLs. The core
   * removes every one of them from every error that leaves the SDK (message, stack and the whole cause
   * chain). A function, so that credentials the provider learns later (a per-sandbox token) count too.
   */
  readonly secrets?: (() => readonly (string | undefined)[]) | undefined;
  /**
   * Maps what the provider's SDK or API throws onto the taxonomy. Return `undefined` to leave the decision to
   * the core's default mapping (abort and timeout errors, errno codes, HTTP statuses). `defineProvider`
   * applies it, with the secrets and the provider's name, to every driver method, so no driver method wraps
   * errors by hand.
   */
  readonly mapError?:
    | ((error: unknown, context: ProviderErrorContext) => SandboxError | undefined)
    | undefined;
}

/** What a buffered exec takes on stdin: any bytes, UTF-8 text only, or nothing. */
export type ExecStdinV1 = "bytes" | "text" | "none";

/** What {@link ProviderDeclarationV1.mapError} is told about the failed call. */
export interface ProviderErrorContext {
  /** The driver method that failed, e.g. `"doReadFile"`. */
  readonly method: keyof ProviderDriverV1;
  /** What was being done, as error messages name it, e.g. `"files.read /etc/hosts"`. */
  readonly operation: string;
  /** The native id of the sandbox the call was about, when it was about one. */
  readonly sandboxId?: string | undefined;
}

/** A provider: its declaration plus its driver methods. Build one with `defineProvider`. */
export type SandboxProviderV1<
  TCaps extends CapabilityMap = CapabilityMap,
  TNative = unknown,
> = ProviderDeclarationV1<TCaps> & ProviderDriverV1<TNative>;

// The names without a version are the current version; they stay valid when a later version is added.

/** The current version of {@link DriverSandboxV1}. */
export type DriverSandbox<TNative = unknown> = DriverSandboxV1<TNative>;
/** The current version of {@link DriverCallOptionsV1}. */
export type DriverCallOptions = DriverCallOptionsV1;
/** The current version of {@link DriverSandboxInfoV1}. */
export type DriverSandboxInfo = DriverSandboxInfoV1;
/** The current version of {@link DriverCommandV1}. */
export type DriverCommand = DriverCommandV1;
/** The current version of {@link DriverExecRequestV1}. */
export type DriverExecRequest = DriverExecRequestV1;
/** The current version of {@link DriverOutputCallbacksV1}. */
export type DriverOutputCallbacks = DriverOutputCallbacksV1;
/** The current version of {@link ExecStdinV1}. */
export type ExecStdin = ExecStdinV1;
/** The current version of {@link DriverExecControlV1}. */
export type DriverExecControl = DriverExecControlV1;
/** The current version of {@link DriverExitV1}. */
export type DriverExit = DriverExitV1;
/** The current version of {@link DriverExecResultV1}. */
export type DriverExecResult = DriverExecResultV1;
/** The current version of {@link DriverProcessV1}. */
export type DriverProcess = DriverProcessV1;
/** The current version of {@link DriverPtyV1}. */
export type DriverPty = DriverPtyV1;
/** The current version of {@link DriverPtyRequestV1}. */
export type DriverPtyRequest = DriverPtyRequestV1;
/** The current version of {@link ProviderDriverV1}. */
export type ProviderDriver<TNative = unknown> = ProviderDriverV1<TNative>;
/** The current version of {@link ProviderDeclarationV1}. */
export type ProviderDeclaration<TCaps extends CapabilityMap = CapabilityMap> = ProviderDeclarationV1<TCaps>;
/** The current version of {@link SandboxProviderV1}. */
export type SandboxProvider<
  TCaps extends CapabilityMap = CapabilityMap,
  TNative = unknown,
> = SandboxProviderV1<TCaps, TNative>;
