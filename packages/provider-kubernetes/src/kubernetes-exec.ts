/**
 * Exec in a pod over the WebSocket channel protocol. `v5.channel.k8s.io` is asked for first: stdin goes on
 * channel 0 and is closed with the close signal `[255, 0]`, stdout and stderr come back on channels 1
 * and 2 as bytes, and the end is the V1Status on channel 3 — `Success`, or `Failure` with reason
 * `NonZeroExitCode` and the exit code in its causes. The exit code is never read from printed output. A
 * server that only speaks `v4.channel.k8s.io` (Kubernetes before 1.30) cannot close stdin, so stdin then
 * goes through `head -c <size>` in front of the command (a stream is read into memory first, up to a
 * bound). An aborted or timed-out command has its whole process tree killed by a second exec (every exec
 * carries a marker in its environment) before the call rejects. A command may run as long as it likes, but
 * the connection must stay alive: the stream is pinged, and when the API server has sent nothing (no
 * frame, no pong) for `requestTimeoutMs` the command rejects with `Timeout` instead of waiting forever.
 */
import { randomBytes } from "node:crypto";
import type { DriverExecRequest, DriverExit } from "@sbox/core/spec";
import type WebSocket from "ws";
import { abortedError, type KubernetesCluster } from "./kubernetes-cluster.js";
import { kubernetesError } from "./kubernetes-errors.js";
import { findMarkedArgv, killMarkerArgv, markedArgv } from "./kubernetes-kill.js";

/** Where a command runs. */
export interface PodTarget {
  readonly namespace: string;
  readonly pod: string;
  readonly container: string;
}

/** One command. */
export interface PodExecInput {
  readonly argv: readonly string[];
  readonly stdin?: Uint8Array | ReadableStream<Uint8Array> | undefined;
  /** Keep stdin open for writes through the returned session (pty, background). */
  readonly interactiveStdin?: boolean | undefined;
  readonly tty?: boolean | undefined;
  readonly signal: AbortSignal;
  /** Kill the command's tree when `signal` fires (default true). */
  readonly killOnAbort?: boolean | undefined;
  onStdout(chunk: Uint8Array): void;
  onStderr(chunk: Uint8Array): void;
  /** Handed a way to signal the running command's tree once it started (`DriverExecRequest.onStarted`). */
  readonly onStarted?: DriverExecRequest["onStarted"];
}

/** How often, and how far apart, a signal is tried again while a just-started command is not in /proc yet. */
const SIGNAL_RETRIES = 20;
const SIGNAL_RETRY_MS = 50;

/** A started exec. */
export interface PodExecSession {
  /** The tree marker of the command's processes. */
  readonly marker: string;
  /** Resolves with the exit; rejects with a SandboxError when the stream ended without one. */
  readonly exit: Promise<DriverExit>;
  /** Writes to stdin (interactive sessions). */
  write(data: Uint8Array): Promise<void>;
  /** Closes stdin. */
  closeStdin(): Promise<void>;
  /** Sends a terminal size (tty sessions). */
  resize(cols: number, rows: number): Promise<void>;
}

const V5 = "v5.channel.k8s.io";
const V4 = "v4.channel.k8s.io";
/** Largest stdin stream spooled for a v4 server. */
const V4_STDIN_LIMIT = 256 * 1024 * 1024;
/** Bytes queued on the socket above which stdin waits. */
const HIGH_WATER = 1024 * 1024;
/** How long killing a tree after an abort may take. */
const KILL_BOUND_MS = 10_000;

/** A random tag for one exec's process tree. */
export function newMarker(): string {
  return randomBytes(8).toString("hex");
}

function execPath(
  target: PodTarget,
  argv: readonly string[],
  flags: { stdin: boolean; tty: boolean },
): string {
  const query = new URLSearchParams();
  for (const word of argv) query.append("command", word);
  query.set("container", target.container);
  query.set("stdout", "true");
  query.set("stderr", flags.tty ? "false" : "true");
  if (flags.stdin) query.set("stdin", "true");
  if (flags.tty) query.set("tty", "true");
  return `/api/v1/namespaces/${encodeURIComponent(target.namespace)}/pods/${encodeURIComponent(target.pod)}/exec?${query}`;
}

/** The exit of a V1Status from the status channel. */
export function exitFromStatus(text: string): DriverExit | Error {
  let status: {
    status?: string;
    reason?: string;
    message?: string;
    details?: { causes?: { reason?: string; message?: string }[] };
  };
  try {
    status = JSON.parse(text) as typeof status;
  } catch {
    return new Error(`the status channel carried no V1Status: ${text.slice(0, 200)}`);
  }
  if (status.status === "Success") return { exitCode: 0 };
  if (status.reason === "NonZeroExitCode") {
    const cause = status.details?.causes?.find((c) => c.reason === "ExitCode");
    const code = Number(cause?.message);
    if (Number.isInteger(code)) return { exitCode: code };
  }
  return new Error(status.message ?? "the command failed without an exit code");
}

async function collect(stream: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array> {
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw kubernetesError(
        "Validation",
        `this API server only speaks ${V4}, which cannot close stdin: a stdin stream is read into memory first, and this one is larger than ${limit} bytes`,
      );
    }
    parts.push(value);
  }
  return Buffer.concat(parts);
}

function send(ws: WebSocket, channel: number, data: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    const frame = Buffer.concat([
      Buffer.from([channel]),
      Buffer.from(data.buffer, data.byteOffset, data.byteLength),
    ]);
    ws.send(frame, { binary: true }, (error) => (error ? reject(error) : resolve()));
    if (ws.bufferedAmount < HIGH_WATER) resolve();
  });
}

/** Execs in pods of one cluster. */
export class PodExec {
  constructor(private readonly cluster: KubernetesCluster) {}

  /** Starts a command; the session's `exit` settles when it ends. */
  async start(target: PodTarget, input: PodExecInput): Promise<PodExecSession> {
    const marker = newMarker();
    const hasStdin = input.stdin !== undefined || input.interactiveStdin === true;
    const tty = input.tty === true;
    let ws: WebSocket;
    let stdinBytes: Uint8Array | undefined;
    // The command starts as soon as the upgrade succeeds, so the protocol must be known before the
    // command is chosen: with stdin, v5 alone is asked for first, and v4 (with `head -c`) only if refused.
    try {
      ws = await this.cluster.websocket(
        execPath(target, markedArgv(marker, input.argv), { stdin: hasStdin, tty }),
        hasStdin ? [V5] : [V5, V4],
        input.signal,
        "exec",
      );
    } catch (error) {
      if (
        !hasStdin ||
        input.interactiveStdin ||
        !/subprotocol|protocol/i.test(String((error as Error).message))
      )
        throw error;
      stdinBytes =
        input.stdin instanceof Uint8Array
          ? input.stdin
          : await collect(input.stdin as ReadableStream<Uint8Array>, V4_STDIN_LIMIT);
      ws = await this.cluster.websocket(
        execPath(target, markedArgv(marker, input.argv, stdinBytes.byteLength), { stdin: true, tty }),
        [V4],
        input.signal,
        "exec",
      );
    }
    const v5 = ws.protocol === V5;
    const deadlineMs = this.cluster.options.requestTimeoutMs;
    let lastHeard = Date.now();
    let statusText = "";
    let sawStatus = false;
    let stdinClosed = false;
    const exit = new Promise<DriverExit>((resolve, reject) => {
      let settled = false;
      const onAbort = () => {
        if (settled) return;
        settled = true;
        ws.terminate();
        const rejection = abortedError("exec", input.signal);
        if (input.killOnAbort === false) return reject(rejection);
        void this.kill(target, marker, "SIGKILL").finally(() => reject(rejection));
      };
      input.signal.addEventListener("abort", onAbort, { once: true });
      const heard = () => {
        lastHeard = Date.now();
      };
      ws.on("pong", heard);
      const liveness = setInterval(
        () => {
          if (Date.now() - lastHeard > deadlineMs) {
            finish(
              undefined,
              kubernetesError(
                "Timeout",
                `kubernetes exec: the API server sent nothing on the command's stream for ${deadlineMs} ms (not even a pong): the connection is given up`,
                { retryable: false },
              ),
            );
            ws.terminate();
            return;
          }
          if (ws.readyState === ws.OPEN) ws.ping();
        },
        Math.max(50, Math.floor(deadlineMs / 3)),
      );
      liveness.unref?.();
      ws.on("message", (data: Buffer, isBinary) => {
        heard();
        if (!isBinary || data.length === 0) return;
        const channel = data[0];
        const payload = data.subarray(1);
        if (channel === 1) input.onStdout(payload);
        else if (channel === 2) input.onStderr(payload);
        else if (channel === 3) {
          sawStatus = true;
          statusText += payload.toString("utf8");
        }
      });
      const finish = (error?: Error, failure?: Error) => {
        clearInterval(liveness);
        if (settled) return;
        settled = true;
        input.signal.removeEventListener("abort", onAbort);
        if (failure) {
          reject(failure);
          return;
        }
        if (sawStatus) {
          const result = exitFromStatus(statusText);
          if (result instanceof Error)
            reject(kubernetesError("Provider", `kubernetes exec: ${result.message}`));
          else resolve(result);
          return;
        }
        reject(
          kubernetesError(
            "Provider",
            `kubernetes exec: the stream ended without an exit status${error ? ` (${error.message})` : ""}: the pod may be gone`,
            { retryable: false, ...(error ? { cause: error } : {}) },
          ),
        );
      };
      ws.on("close", () => finish());
      ws.on("error", (error) => finish(error));
    });
    exit.catch(() => undefined);
    let writes: Promise<void> = Promise.resolve();
    const session: PodExecSession = {
      marker,
      exit,
      write(data) {
        writes = writes.then(() => (stdinClosed ? undefined : send(ws, 0, data)));
        return writes;
      },
      closeStdin() {
        writes = writes.then(() => {
          if (stdinClosed) return;
          stdinClosed = true;
          if (v5) return send(ws, 255, Buffer.from([0]));
        });
        return writes;
      },
      resize(cols, rows) {
        return send(ws, 4, Buffer.from(JSON.stringify({ Width: cols, Height: rows })));
      },
    };
    if (stdinBytes !== undefined) {
      void session.write(stdinBytes).catch(() => undefined);
    } else if (input.stdin instanceof Uint8Array) {
      void session
        .write(input.stdin)
        .then(() => session.closeStdin())
        .catch(() => undefined);
    } else if (input.stdin) {
      void this.pump(input.stdin, session, input.signal);
    }
    return session;
  }

  private async pump(
    stream: ReadableStream<Uint8Array>,
    session: PodExecSession,
    signal: AbortSignal,
  ): Promise<void> {
    const reader = stream.getReader();
    try {
      for (;;) {
        if (signal.aborted) break;
        const { value, done } = await reader.read();
        if (done) break;
        if (value.byteLength > 0) await session.write(value);
      }
      await session.closeStdin();
    } catch {
      await reader.cancel().catch(() => undefined);
    }
  }

  /** Runs a command to its end. */
  async run(target: PodTarget, input: PodExecInput): Promise<DriverExit> {
    const session = await this.start(target, input);
    let running = true;
    session.exit.then(
      () => {
        running = false;
      },
      () => {
        running = false;
      },
    );
    input.onStarted?.({
      signal: (name) => this.signal(target, session.marker, name, () => running && !input.signal.aborted),
    });
    return session.exit;
  }

  /**
   * Signals the tree of a running exec (every process tagged with `marker`) with exactly `signal`. A command
   * that was started but is not visible yet is looked for again for up to a second; one that ended
   * (`running()` false) is no error. Rejects when the helper fails.
   */
  async signal(target: PodTarget, marker: string, signal: string, running: () => boolean): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const result = await this.helper(
        target,
        killMarkerArgv(marker, signal),
        AbortSignal.timeout(KILL_BOUND_MS),
      );
      if (result.exitCode === 0) return;
      if (result.exitCode !== 3)
        throw kubernetesError(
          "Provider",
          `kubernetes: signalling the command failed: ${result.stderr.trim()}`,
        );
      if (!running() || attempt >= SIGNAL_RETRIES) return;
      await new Promise((resolve) => setTimeout(resolve, SIGNAL_RETRY_MS));
    }
  }

  /** Runs a short helper command and returns its output and exit code. */
  async helper(
    target: PodTarget,
    argv: readonly string[],
    signal: AbortSignal,
  ): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const exit = await this.run(target, {
      argv,
      signal,
      killOnAbort: false,
      onStdout: (chunk) => out.push(Buffer.from(chunk)),
      onStderr: (chunk) => err.push(Buffer.from(chunk)),
    });
    return {
      exitCode: exit.exitCode ?? 0,
      stdout: Buffer.concat(out).toString("utf8"),
      stderr: Buffer.concat(err).toString("utf8"),
    };
  }

  /** Signals every process tagged with `marker` (and their trees); best effort, bounded. */
  async kill(target: PodTarget, marker: string, signal: string): Promise<void> {
    await this.helper(target, killMarkerArgv(marker, signal), AbortSignal.timeout(KILL_BOUND_MS)).catch(
      () => undefined,
    );
  }

  /** The pid of the process tagged with `marker`, or `undefined` when it cannot be found. */
  async pidOf(target: PodTarget, marker: string): Promise<number | undefined> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const found = await this.helper(
        target,
        findMarkedArgv(marker),
        AbortSignal.timeout(KILL_BOUND_MS),
      ).catch(() => undefined);
      const pid = Number(found?.stdout.trim());
      if (Number.isInteger(pid) && pid > 0) return pid;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return undefined;
  }
}
