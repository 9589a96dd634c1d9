/**
 * `pods/exec` and `pods/attach`, whatever carries them (a WebSocket channel protocol or SPDY streams): a
 * command runs in the pod's backend sandbox with the container's working directory and user, stdin
 * arrives as the client sends it and ends when the client closes it (v5 close signal, SPDY half-close, or
 * the client going away — which, as on a real node, does not kill the command), stdout and stderr go
 * back byte-exact as they are produced, and the end is reported on the status channel: a `Success`
 * Status, or `NonZeroExitCode` with the code in its causes (v4 and later), or the error text (v2, v3).
 * With `tty=true` the command gets a terminal (the backend's pty) sized by the resize channel. Attach
 * joins the main process: its output from now on, its stdin when the container keeps stdin open.
 */
import { shellQuoteArgv } from "@sbox/core/spec";
import type { EmulatorBackend } from "../backend.js";
import { runInMachine } from "../machine-exec.js";
import type { PodRuntime } from "./kubernetes-kubelet.js";
import { containerExitCode, type KubeObject } from "./kubernetes-objects.js";
import { podSpecOf } from "./kubernetes-pod-admission.js";
import { badRequest, execExitStatus, execFailureStatus, type KubeStatus } from "./kubernetes-status.js";

/** The streams of one exec or attach session, as the transport offers them. */
export interface ExecIO {
  /** The protocol version (1–5): v4 and later carry a structured Status. */
  readonly version: number;
  readonly onStdin?: ((listener: (data: Buffer) => void) => void) | undefined;
  readonly onStdinEnd?: ((listener: () => void) => void) | undefined;
  readonly onResize?: ((listener: (size: { Width?: number; Height?: number }) => void) => void) | undefined;
  readonly stdout?: ((data: Uint8Array) => Promise<void>) | undefined;
  readonly stderr?: ((data: Uint8Array) => Promise<void>) | undefined;
  /** Reports the end (Status for v4+, its message for older versions) and closes the session. */
  finish(status: KubeStatus): Promise<void>;
  /** The client went away. */
  onGone(listener: () => void): void;
}

/** What the request asked for. */
export interface ExecRequest {
  readonly command: readonly string[];
  readonly container: string | undefined;
  readonly stdin: boolean;
  readonly stdout: boolean;
  readonly stderr: boolean;
  readonly tty: boolean;
}

/** Reads exec/attach options from the query (`command` repeated, booleans as `true`/`1`). */
export function execRequestOf(url: URL): ExecRequest {
  const flag = (name: string) => ["true", "1"].includes((url.searchParams.get(name) ?? "").toLowerCase());
  return {
    command: url.searchParams.getAll("command"),
    container: url.searchParams.get("container") ?? undefined,
    stdin: flag("stdin"),
    stdout: flag("stdout"),
    stderr: flag("stderr"),
    tty: flag("tty"),
  };
}

/** Checks an exec/attach request against the pod before the upgrade (answers 400 like the API server). */
export function checkExecRequest(
  pod: KubeObject,
  runtime: PodRuntime | undefined,
  request: ExecRequest,
  attach: boolean,
): void {
  const container = podSpecOf(pod).containers[0]!;
  if (request.container !== undefined && request.container !== "" && request.container !== container.name) {
    throw badRequest(`container ${request.container} is not valid for pod ${pod.metadata.name}`);
  }
  if (!attach && request.command.length === 0) throw badRequest("you must specify at least 1 command");
  if (!request.stdin && !request.stdout && !request.stderr)
    throw badRequest("you must specify at least 1 of stdin, stdout, stderr");
  const phase = (pod.status as { phase?: string } | undefined)?.phase;
  if (phase === "Succeeded" || phase === "Failed") {
    throw badRequest(
      `cannot ${attach ? "attach to" : "exec into"} a container in a completed pod; current phase is ${phase}`,
    );
  }
  if (!runtime?.running)
    throw badRequest(`container ${container.name} is not running (pod phase ${phase ?? "Unknown"})`);
}

function statusOf(exitCode: number, argv: readonly string[]): KubeStatus {
  return execExitStatus(exitCode, argv);
}

/** Runs one exec session to its end. */
export async function runExec(
  backend: EmulatorBackend,
  pod: KubeObject,
  runtime: PodRuntime,
  request: ExecRequest,
  io: ExecIO,
): Promise<void> {
  const sandbox = runtime.sandbox;
  if (!sandbox) {
    await io.finish(execFailureStatus("container is not running"));
    return;
  }
  const container = podSpecOf(pod).containers[0]!;
  const user = container.securityContext?.runAsUser ?? podSpecOf(pod).securityContext?.runAsUser;
  if (request.tty) return runTty(pod, runtime, request, io);
  let stdin: ReadableStream<Uint8Array> | undefined;
  if (request.stdin && io.onStdin) {
    const pipe = new TransformStream<Uint8Array, Uint8Array>();
    const writer = pipe.writable.getWriter();
    let writes: Promise<void> = Promise.resolve();
    io.onStdin((data) => {
      writes = writes.then(() => writer.write(new Uint8Array(data))).catch(() => undefined);
    });
    const close = () => {
      writes = writes.then(() => writer.close()).catch(() => undefined);
    };
    io.onStdinEnd?.(close);
    io.onGone(close);
    stdin = pipe.readable;
  }
  try {
    const exit = await runInMachine(backend, sandbox, {
      argv: request.command,
      ...(container.workingDir ? { cwd: container.workingDir } : {}),
      ...(user !== undefined ? { user: String(user) } : {}),
      ...(stdin ? { stdin } : {}),
      // The client going away does not end the command (a real node does not kill it either); only the
      // sandbox going away does.
      signal: new AbortController().signal,
      onStdout: (chunk) => void io.stdout?.(chunk),
      onStderr: (chunk) => void io.stderr?.(chunk),
    });
    await io.finish(statusOf(containerExitCode(exit.exitCode, exit.signal), request.command));
  } catch (error) {
    await io.finish(
      execFailureStatus(
        `error executing command in container: ${error instanceof Error ? error.message : String(error)}`,
      ),
    );
  }
}

async function runTty(pod: KubeObject, runtime: PodRuntime, request: ExecRequest, io: ExecIO): Promise<void> {
  const sandbox = runtime.sandbox;
  const container = podSpecOf(pod).containers[0]!;
  if (!sandbox?.pty) {
    await io.finish(execFailureStatus("the emulator's backend has no terminals (tty=true is not available)"));
    return;
  }
  try {
    const pty = await sandbox.pty.create({
      cols: 80,
      rows: 24,
      command: shellQuoteArgv(request.command),
      ...(container.workingDir ? { cwd: container.workingDir } : {}),
      onData: (data) => void io.stdout?.(data),
    });
    io.onStdin?.((data) => void pty.write(new Uint8Array(data)).catch(() => undefined));
    io.onResize?.((size) => {
      if (size.Width && size.Height) void pty.resize(size.Width, size.Height).catch(() => undefined);
    });
    const exit = await pty.wait();
    await io.finish(statusOf(exit.exitCode, request.command));
  } catch (error) {
    await io.finish(
      execFailureStatus(
        `error executing command in container: ${error instanceof Error ? error.message : String(error)}`,
      ),
    );
  }
}

/** Runs one attach session: the main process's output from now on, and its stdin when open. */
export async function runAttach(runtime: PodRuntime, request: ExecRequest, io: ExecIO): Promise<void> {
  const log = runtime.log;
  let position = log.read({}).next;
  let over = false;
  const stopExit = runtime.onMainExit(() => {
    over = true;
  });
  io.onGone(() => {
    over = true;
  });
  if (request.stdin && io.onStdin) {
    io.onStdin((data) => void runtime.writeMainStdin(new Uint8Array(data)).catch(() => undefined));
    io.onStdinEnd?.(() => void runtime.closeMainStdin());
  }
  try {
    while (!over || log.since(position).length > 0) {
      for (const chunk of log.since(position)) {
        position = chunk.seq + 1;
        if (request.stdout) await io.stdout?.(chunk.bytes);
      }
      if (log.finished) over = true;
      if (!over) await log.changed(1_000);
    }
  } finally {
    stopExit();
  }
  await io.finish(statusOf(0, []));
}
