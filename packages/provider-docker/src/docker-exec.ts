import { randomBytes } from "node:crypto";
import type { Socket } from "node:net";
import { abortErrorOf, type DriverExecRequest, type DriverExit, SandboxError } from "@sbox/core/spec";
import type Dockerode from "dockerode";
import { DockerDemuxer } from "./docker-demux.js";
import { bounded, type DockerEngine } from "./docker-engine.js";
import { toDockerError } from "./docker-errors.js";
import { EXEC_MARKER_VARIABLE, killMarkerCommand } from "./docker-kill.js";
import { createPastLatePause } from "./docker-late-pause.js";
import { type OciStartFailure, ociStartFailure } from "./docker-oci-failure.js";

/** One command to run in a container. */
export interface DockerExecInput {
  readonly cmd: readonly string[];
  readonly env?: Readonly<Record<string, string>> | undefined;
  readonly cwd?: string | undefined;
  readonly user?: string | undefined;
  readonly stdin?: Uint8Array | ReadableStream<Uint8Array> | undefined;
  readonly signal: AbortSignal;
  /** Kill the command's tree when `signal` fires (default true; false for the kill helper itself). */
  readonly killOnAbort?: boolean | undefined;
  onStdout(chunk: Uint8Array): void;
  onStderr(chunk: Uint8Array): void;
  /** Back-pressure: while its promise is pending the connection is paused (see `DriverOutputCallbacks`). */
  readonly ready?: (() => PromiseLike<void> | undefined) | undefined;
  /** Handed a way to signal the running command's tree once it started (`DriverExecRequest.onStarted`). */
  readonly onStarted?: DriverExecRequest["onStarted"];
}

/** How long killing a tree after an abort may take before the abort is reported anyway. */
const KILL_BOUND_MS = 10_000;

/** runc reports "OCI runtime exec failed" on stdout when the process could not even start (see docker-oci-failure.ts). */
const OCI_FAILURE = /^OCI runtime exec failed/;

/** A random tag for one exec's process tree. */
export function newMarker(): string {
  return randomBytes(8).toString("hex");
}

/** The exec environment: the tree marker first, then the caller's variables. */
export function envList(marker: string, env: Readonly<Record<string, string>> | undefined): string[] {
  const list = [`${EXEC_MARKER_VARIABLE}=${marker}`];
  if (env) for (const [key, value] of Object.entries(env)) list.push(`${key}=${value}`);
  return list;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Reads an exec's exit code once its stream ended; waits (bounded by `signal`) while it still runs. */
export async function exitOf(
  engine: DockerEngine,
  exec: Dockerode.Exec,
  signal: AbortSignal,
): Promise<number> {
  let delay = 2;
  for (;;) {
    const info = await engine.call("exec inspect", signal, (_docker, bound) =>
      exec.inspect({ abortSignal: bound }),
    );
    if (!info.Running) {
      if (typeof info.ExitCode !== "number") {
        throw new SandboxError("Provider", "docker exec: the engine reported no exit code", {
          retryable: true,
        });
      }
      return info.ExitCode;
    }
    await sleep(delay);
    delay = Math.min(delay * 2, 100);
  }
}

/** How often, and how far apart, a signal is tried again while a just-started command is not in /proc yet. */
const SIGNAL_RETRIES = 20;
const SIGNAL_RETRY_MS = 50;

/**
 * Signals the tree of a running exec (every process tagged with `marker`) with exactly `signal`, as root so
 * a command run as any user is reached. A command that was started but is not visible yet is looked for
 * again for up to a second; one that ended (`running()` false) is no error. Rejects when the helper fails.
 */
export async function signalExec(
  engine: DockerEngine,
  container: Dockerode.Container,
  marker: string,
  signal: string,
  running: () => boolean,
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const out = await runBuffered(
      engine,
      container,
      killMarkerCommand(marker, signal),
      AbortSignal.timeout(KILL_BOUND_MS),
      { killOnAbort: false, user: "0" },
    );
    if (out.exitCode === 0) return;
    if (out.exitCode !== 3) {
      throw new SandboxError(
        "Provider",
        `docker: signalling the command failed: ${out.stderr.toString("utf8").trim()}`,
        {
          retryable: false,
        },
      );
    }
    if (!running() || attempt >= SIGNAL_RETRIES) return;
    await new Promise((resolve) => setTimeout(resolve, SIGNAL_RETRY_MS));
  }
}

/** Signals every process tagged with `marker` (and their trees); best effort, bounded. */
export async function killByMarker(
  engine: DockerEngine,
  container: Dockerode.Container,
  marker: string,
  signal: string,
): Promise<void> {
  await runBuffered(
    engine,
    container,
    killMarkerCommand(marker, signal),
    AbortSignal.timeout(KILL_BOUND_MS),
    {
      killOnAbort: false,
    },
  ).catch(() => undefined);
}

async function pumpStdin(socket: Socket, stdin: Uint8Array | ReadableStream<Uint8Array>): Promise<void> {
  if (stdin instanceof Uint8Array) {
    socket.end(stdin);
    return;
  }
  const reader = stdin.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (socket.destroyed) {
        await reader.cancel().catch(() => undefined);
        return;
      }
      if (!socket.write(value)) {
        await new Promise<void>((resolve) => {
          const done = () => {
            socket.off("drain", done);
            socket.off("close", done);
            resolve();
          };
          socket.on("drain", done);
          socket.on("close", done);
        });
      }
    }
    if (!socket.destroyed) socket.end();
  } finally {
    reader.releaseLock();
  }
}

/** A created and started hijacked exec; `started()` tells the pause gate that it runs. */
export interface HijackedExec {
  readonly exec: Dockerode.Exec;
  readonly socket: Socket;
  readonly started: () => void;
}

/**
 * Creates an exec and starts it hijacked (one connection carrying stdin and output), registered with the
 * pause gate all along so a pause cannot freeze the container between create and start. When the start
 * fails, the gate is told and `onStartFailure` runs before the error is rethrown.
 */
export async function startHijackedExec(
  engine: DockerEngine,
  container: Dockerode.Container,
  label: "exec" | "pty",
  options: Dockerode.ExecCreateOptions,
  start: {
    readonly stdin: boolean;
    readonly tty?: boolean;
    readonly signal: AbortSignal;
    readonly onStartFailure?: () => Promise<void>;
  },
): Promise<HijackedExec> {
  const { signal } = start;
  const register = await engine.pauseGate.enter(container.id);
  let exec: Dockerode.Exec;
  try {
    exec = await createPastLatePause(signal, () =>
      engine.call(`${label} create`, signal, (_docker, bound) =>
        container.exec({ ...options, abortSignal: bound }),
      ),
    );
  } catch (error) {
    register(undefined);
    throw error;
  }
  const started = register(exec);
  try {
    const socket = (await engine.call(`${label} start`, signal, (_docker, bound) =>
      exec.start({
        hijack: true,
        stdin: start.stdin,
        ...(start.tty ? { Tty: true } : {}),
        abortSignal: bound,
      }),
    )) as unknown as Socket;
    return { exec, socket, started };
  } catch (error) {
    started();
    await start.onStartFailure?.();
    throw error;
  }
}

/**
 * Runs a command in a container and streams its output: one exec create, one hijacked exec start (stdout
 * and stderr demultiplexed, stdin written to the same connection and half-closed at its end), one exec
 * inspect for the real exit code. Every process the command starts carries a random marker in its
 * environment, so an abort kills the whole tree (also processes that left the session) through a second
 * exec, then rejects with the signal's reason. A connection cut by the engine (daemon killed) rejects with
 * a retryable `Provider` error from the follow-up call, never hangs.
 */
export async function runExec(
  engine: DockerEngine,
  container: Dockerode.Container,
  input: DockerExecInput,
): Promise<DriverExit> {
  if (input.signal.aborted) throw abortErrorOf(input.signal, "docker exec");
  // A command may run as long as it likes, but not in a container paused under it or on a hung engine.
  const lost = new AbortController();
  const stopWatching = engine.liveness.watch(container, (error) => lost.abort(error));
  try {
    return await runWatchedExec(engine, container, input, lost.signal);
  } finally {
    stopWatching();
  }
}

async function runWatchedExec(
  engine: DockerEngine,
  container: Dockerode.Container,
  input: DockerExecInput,
  lost: AbortSignal,
): Promise<DriverExit> {
  const signal = AbortSignal.any([input.signal, lost]);
  const marker = newMarker();
  const attachStdin = input.stdin !== undefined;
  const createOptions: Dockerode.ExecCreateOptions = {
    Cmd: [...input.cmd],
    AttachStdout: true,
    AttachStderr: true,
    AttachStdin: attachStdin,
    Env: envList(marker, input.env),
  };
  if (input.cwd !== undefined) createOptions.WorkingDir = input.cwd;
  if (input.user !== undefined) createOptions.User = input.user;

  const { exec, socket, started } = await startHijackedExec(engine, container, "exec", createOptions, {
    stdin: attachStdin,
    signal,
    // The start may have reached the engine before the abort: make sure nothing keeps running.
    onStartFailure: async () => {
      if (signal.aborted && input.killOnAbort !== false)
        await killByMarker(engine, container, marker, "KILL");
    },
  });

  let first = true;
  let ociFailure = false;
  let startFailure: OciStartFailure | undefined;
  const demuxer = new DockerDemuxer(
    (chunk) => {
      if (first) {
        first = false;
        if (
          OCI_FAILURE.test(
            Buffer.from(chunk.buffer, chunk.byteOffset, Math.min(chunk.length, 64)).toString("latin1"),
          )
        ) {
          ociFailure = true;
          startFailure = ociStartFailure(Buffer.from(chunk).toString("utf8"));
          input.onStderr(startFailure ? Buffer.from(startFailure.message) : chunk);
          return;
        }
      }
      if (ociFailure) {
        if (!startFailure) input.onStderr(chunk);
      } else input.onStdout(chunk);
    },
    (chunk) => {
      first = false;
      input.onStderr(chunk);
    },
  );

  const streamEnded = new Promise<void>((resolve, reject) => {
    socket.once("data", started);
    socket.on("data", (data: Buffer) => {
      demuxer.push(data);
      // Back-pressure: while the consumer is behind the connection is paused, so the engine (and the
      // command's pipe behind it) holds the output instead of this process's memory.
      const behind = input.ready?.();
      if (!behind) return;
      socket.pause();
      Promise.resolve(behind).then(
        () => socket.resume(),
        () => socket.resume(),
      );
    });
    socket.once("end", () => resolve());
    socket.once("close", () => resolve());
    socket.once("error", (error) => reject(toDockerError(error, "exec stream")));
  });
  streamEnded.catch(() => undefined);
  streamEnded.finally(started).catch(() => undefined);

  let streamOpen = true;
  streamEnded.then(
    () => {
      streamOpen = false;
    },
    () => {
      streamOpen = false;
    },
  );
  input.onStarted?.({
    signal: (name) => signalExec(engine, container, marker, name, () => streamOpen && !signal.aborted),
  });

  let stdinFailure: unknown;
  if (attachStdin && input.stdin !== undefined) {
    pumpStdin(socket, input.stdin).catch((error: unknown) => {
      stdinFailure = error;
      socket.destroy();
    });
  }

  const aborted = new Promise<never>((_resolve, reject) => {
    const onAbort = () => {
      if (lost.aborted) {
        // Nothing can be killed in a paused container or through a hung engine: report at once.
        socket.destroy();
        reject(lost.reason);
        return;
      }
      const kill =
        input.killOnAbort === false ? Promise.resolve() : killByMarker(engine, container, marker, "KILL");
      void kill.finally(() => {
        socket.destroy();
        reject(abortErrorOf(signal, "docker exec"));
      });
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    streamEnded.then(
      () => signal.removeEventListener("abort", onAbort),
      () => signal.removeEventListener("abort", onAbort),
    );
  });
  aborted.catch(() => undefined);

  await Promise.race([streamEnded, aborted]);
  if (stdinFailure !== undefined) {
    await killByMarker(engine, container, marker, "KILL");
    throw toDockerError(stdinFailure, "exec stdin");
  }
  let exitCode = await Promise.race([exitOf(engine, exec, signal), aborted]);
  if (startFailure) exitCode = startFailure.exitCode;
  else if (ociFailure && exitCode === 126) exitCode = 127;
  return { exitCode };
}

/** Buffered output of an internal helper command. */
export interface BufferedOutput {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number;
}

/** Runs an internal helper command (kill, mkdir, metrics) to completion, bounded by `signal`. */
export async function runBuffered(
  engine: DockerEngine,
  container: Dockerode.Container,
  cmd: readonly string[],
  signal: AbortSignal,
  options: {
    stdin?: Uint8Array | ReadableStream<Uint8Array> | undefined;
    user?: string | undefined;
    killOnAbort?: boolean | undefined;
  } = {},
): Promise<BufferedOutput> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const exit = await runExec(engine, container, {
    cmd,
    signal,
    stdin: options.stdin,
    user: options.user,
    killOnAbort: options.killOnAbort,
    onStdout: (chunk) => out.push(Buffer.from(chunk)),
    onStderr: (chunk) => err.push(Buffer.from(chunk)),
  });
  return { stdout: Buffer.concat(out), stderr: Buffer.concat(err), exitCode: exit.exitCode ?? -1 };
}

/** Same as {@link runBuffered} but bounded by the engine's request timeout as well. */
export function runHelper(
  engine: DockerEngine,
  container: Dockerode.Container,
  cmd: readonly string[],
  signal: AbortSignal,
  operation: string,
  options: { stdin?: Uint8Array | ReadableStream<Uint8Array> | undefined; user?: string | undefined } = {},
): Promise<BufferedOutput> {
  return bounded(operation, signal, engine.options.requestTimeoutMs, (bound) =>
    runBuffered(engine, container, cmd, bound, options),
  );
}
