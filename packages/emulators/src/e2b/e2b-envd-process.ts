/**
 * envd's `process.Process` service (spec/envd/process/process.proto) over the backend sandbox: Start and
 * Connect stream ProcessEvents (start, data, end, keepalive); List, SendInput, SendSignal, CloseStdin and
 * Update are unary; StreamInput is client-streaming. Processes are the backend's background processes
 * (`commands.spawn`) and terminals (`pty.create`), started as the requesting user with envd's environment
 * (PATH of the sandbox, HOME, USER, LOGNAME, the sandbox's env vars, the request's env vars).
 *
 * Like envd: output is sent only to connected streams (nothing is replayed on Connect), a process that
 * ended is forgotten, `Connect-Timeout-Ms` kills the process with SIGKILL, and when the sandbox is killed
 * or paused without memory every stream is cut without an end message.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { PtyHandle, SandboxProcess } from "@sbox/core";
import { ConnectFailure, type ConnectMessage, type ServerStream } from "./e2b-connect-protocol.js";
import { readSupervisedStderr, SupervisorMarkers } from "./e2b-envd-supervisor.js";
import { endEventOf } from "./e2b-go-exit.js";
import type { E2BMachine, E2BUser } from "./e2b-machine.js";
import { expandAndResolve } from "./e2b-paths.js";

/** What the process service needs of its sandbox. */
export interface EnvdProcessHost {
  readonly machine: E2BMachine;
  /** Environment variables given at create (`envVars`). */
  readonly envVars: Readonly<Record<string, string>>;
  /** Registers a stream to cut when the sandbox dies. */
  track(stream: ServerStream): void;
  /**
   * Resolves true once the sandbox runs (at once when it does), false when it is killed or cold-booted: a
   * process whose output following broke while the sandbox was frozen is re-attached then.
   */
  whenRunning(): Promise<boolean>;
}

type Subscriber = (event: ConnectMessage) => Promise<void>;

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * After a process exits, output still in flight is delivered; a child that keeps the pipes open does not
 * hold the end back longer than this (Go's Wait does not wait for grandchildren either).
 */
const DRAIN_GRACE_MS = 1_000;

/** How long a start waits for the supervisor's pid marker before reporting the backend's pid. */
const START_MARKER_MS = 10_000;

/** How long a terminal's end waits for the supervisor's exit marker to come through. */
const EXIT_MARKER_MS = 500;

class EnvdProcess {
  readonly subscribers: Set<Subscriber> = new Set();
  end: ConnectMessage | undefined;
  private readonly endWaiters: (() => void)[] = [];
  private delivering: Promise<unknown> = Promise.resolve();
  /** After SIGKILL/SIGTERM envd stops forwarding output (its output context is cancelled). */
  outputCancelled = false;

  constructor(
    /** The pid inside the sandbox (what envd reports). */
    readonly pid: number,
    /** The backend's number for the process (to re-attach to it). */
    readonly backendPid: number,
    readonly config: ConnectMessage,
    readonly tag: string | undefined,
    readonly process: SandboxProcess | undefined,
    readonly pty: PtyHandle | undefined,
    readonly stdinOpen: { value: boolean },
  ) {}

  /** Sends one event to every subscriber, in order; resolves when they took it (back-pressure). */
  deliver(event: ConnectMessage): Promise<void> {
    if (this.outputCancelled) return Promise.resolve();
    const sends = Promise.all([...this.subscribers].map((send) => send({ event }).catch(() => undefined)));
    this.delivering = this.delivering.then(() => sends);
    return sends.then(() => undefined);
  }

  finish(end: ConnectMessage): void {
    if (this.end) return;
    this.end = end;
    void this.delivering.then(async () => {
      await Promise.all([...this.subscribers].map((send) => send({ event: { end } }).catch(() => undefined)));
      for (const waiter of this.endWaiters.splice(0)) waiter();
    });
  }

  whenEnded(): Promise<void> {
    if (this.end) return this.delivering.then(() => undefined);
    return new Promise((resolve) => this.endWaiters.push(resolve));
  }
}

function base64(text: string): string {
  return Buffer.from(text, "utf8").toString("base64");
}

function bytesOf(value: unknown): Buffer {
  return typeof value === "string" ? Buffer.from(value, "base64") : Buffer.alloc(0);
}

function signalName(value: unknown): "SIGKILL" | "SIGTERM" | undefined {
  if (value === "SIGNAL_SIGKILL" || value === 9) return "SIGKILL";
  if (value === "SIGNAL_SIGTERM" || value === 15) return "SIGTERM";
  return undefined;
}

async function pump(stream: AsyncIterable<string>, onChunk: (chunk: string) => Promise<void>): Promise<void> {
  try {
    for await (const chunk of stream) await onChunk(chunk);
  } catch {
    // The output ends with the process; how it ended is reported by wait().
  }
}

/** The process service of one emulated sandbox. */
export class EnvdProcessService {
  private readonly processes = new Map<number, EnvdProcess>();

  constructor(private readonly host: EnvdProcessHost) {}

  private select(message: ConnectMessage): EnvdProcess {
    const selector = (message.process ?? {}) as { pid?: unknown; tag?: unknown };
    if (typeof selector.tag === "string") {
      for (const p of this.processes.values()) if (p.tag === selector.tag && !p.end) return p;
      throw new ConnectFailure("not_found", `process with tag ${selector.tag} not found`);
    }
    const pid = Number(selector.pid ?? 0);
    const found = this.processes.get(pid);
    if (!found || found.end) throw new ConnectFailure("not_found", `process with pid ${pid} not found`);
    return found;
  }

  private environment(user: E2BUser, envs: Record<string, string>): Record<string, string> {
    const env: Record<string, string> = {
      HOME: user.home,
      USER: user.name,
      LOGNAME: user.name,
      ...this.host.envVars,
      ...envs,
    };
    for (const key of Object.keys(env)) {
      if (!ENV_KEY.test(key)) {
        throw new ConnectFailure(
          "invalid_argument",
          `invalid environment variable name ${JSON.stringify(key)}: this emulator passes only names matching [A-Za-z_][A-Za-z0-9_]*`,
        );
      }
      if (env[key]!.includes("\0")) {
        throw new ConnectFailure("invalid_argument", `environment variable ${key} contains a NUL byte`);
      }
    }
    return env;
  }

  /** `Start`: runs the process and streams its events until it ends or the client goes away. */
  async start(message: ConnectMessage, stream: ServerStream, headers: IncomingHttpHeaders): Promise<void> {
    const { machine } = this.host;
    const user = await machine.requestUser(headers.authorization);
    const config = (message.process ?? {}) as {
      cmd?: unknown;
      args?: unknown;
      envs?: unknown;
      cwd?: unknown;
    };
    const cmd = typeof config.cmd === "string" ? config.cmd : "";
    if (cmd === "") throw new ConnectFailure("invalid_argument", "process.cmd is required");
    const args = Array.isArray(config.args) ? config.args.map(String) : [];
    const envs =
      typeof config.envs === "object" && config.envs !== null ? (config.envs as Record<string, string>) : {};
    const cwd = expandAndResolve(typeof config.cwd === "string" ? config.cwd : "", user);
    if (typeof config.cwd === "string" && config.cwd !== "") {
      const info = (await machine.helper("stat", { path: cwd }).catch(() => undefined)) as
        | { type?: string }
        | undefined;
      if (info?.type !== "FILE_TYPE_DIRECTORY") {
        throw new ConnectFailure("invalid_argument", `cwd '${cwd}' does not exist`);
      }
    }
    const env = this.environment(user, envs);
    const tag = typeof message.tag === "string" ? message.tag : undefined;
    const ptyRequest = message.pty as { size?: { cols?: number; rows?: number } } | undefined;
    const stdinWanted = message.stdin === undefined || message.stdin === true;
    let proc: EnvdProcess;
    if (ptyRequest) {
      const ptyApi = machine.sandbox.pty;
      if (!ptyApi) {
        throw new ConnectFailure("unimplemented", "this emulator's backend has no terminals (pty)");
      }
      let target: EnvdProcess | undefined;
      const early: Buffer[] = [];
      const markers = new SupervisorMarkers();
      const { command, env: startEnv } = machine.commandLineFor(user, [cmd, ...args], {
        stdin: true,
        tty: true,
      });
      const handle = await ptyApi
        .create({
          cols: ptyRequest.size?.cols || 80,
          rows: ptyRequest.size?.rows || 24,
          cwd,
          env: { ...env, ...startEnv },
          command,
          onData: (data) => {
            const chunk = Buffer.from(markers.push(Buffer.from(data).toString("latin1")), "latin1");
            if (chunk.byteLength === 0) return;
            if (target) void target.deliver({ data: { pty: chunk.toString("base64") } });
            else early.push(chunk);
          },
        })
        .catch((error: unknown) => {
          throw new ConnectFailure(
            "invalid_argument",
            `error starting pty with command '${[cmd, ...args].join(" ")}' in dir '${cwd}': ${String(error)}`,
          );
        });
      // The pid marker is the supervisor's first write; a terminal that ends first never shows it.
      const ended: Promise<{ exitCode: number; signal?: string | undefined } | { failed: unknown }> = handle
        .wait()
        .catch((error: unknown) => ({ failed: error }));
      await Promise.race([markers.whenPid(START_MARKER_MS), ended]);
      proc = new EnvdProcess(
        markers.pid ?? handle.pid,
        handle.pid,
        config as ConnectMessage,
        tag,
        undefined,
        handle,
        {
          value: true,
        },
      );
      target = proc;
      const ptyProc = proc;
      void ended.then(async (exit) => {
        if ("failed" in exit) {
          ptyProc.finish({ ...endEventOf(-1, undefined), error: String(exit.failed) });
          return;
        }
        // The exit marker comes through the terminal, which may deliver it after the end is known.
        await markers.whenExit(EXIT_MARKER_MS);
        const end = markers.exit ?? { exitCode: exit.exitCode, signal: exit.signal };
        ptyProc.finish(endEventOf(end.exitCode, end.signal));
      });
      this.register(proc);
      await stream.send({ event: { start: { pid: proc.pid } } });
      for (const chunk of early.splice(0)) await proc.deliver({ data: { pty: chunk.toString("base64") } });
    } else {
      const { argv: startArgv, env: startEnv } = machine.commandFor(user, [cmd, ...args], {
        stdin: stdinWanted,
        tty: false,
      });
      const spawned = await machine.sandbox.commands
        .spawn(startArgv, { cwd, env: { ...env, ...startEnv } })
        .catch((error: unknown) => {
          throw new ConnectFailure(
            "invalid_argument",
            `error starting process '${[cmd, ...args].join(" ")}': ${error instanceof Error ? error.message : String(error)}`,
          );
        });
      const { markers, rest } = await readSupervisedStderr(spawned.stderr);
      proc = new EnvdProcess(
        markers.pid ?? spawned.pid,
        spawned.pid,
        config as ConnectMessage,
        tag,
        spawned,
        undefined,
        {
          value: stdinWanted,
        },
      );
      this.register(proc);
      // Subscribe before any output can be delivered: the start event goes first on this stream.
      await stream.send({ event: { start: { pid: proc.pid } } });
      this.wireOutput(proc, spawned, { markers, rest });
    }
    const timeout = Number(headers["connect-timeout-ms"] ?? 0);
    if (timeout > 0) {
      const timer = setTimeout(() => void this.kill(proc, "SIGKILL").catch(() => undefined), timeout);
      void proc.whenEnded().then(() => clearTimeout(timer));
    }
    await this.follow(proc, stream, headers);
  }

  private register(proc: EnvdProcess): void {
    this.processes.set(proc.pid, proc);
    void proc.whenEnded().then(() => {
      if (this.processes.get(proc.pid) === proc) this.processes.delete(proc.pid);
    });
  }

  /**
   * Forwards a background process's output to its subscribers until it ends. Following can break while
   * the backend sandbox is frozen (a pause with memory: the backend's exec is refused meanwhile); the
   * process itself lives on, so once the sandbox runs again it is re-attached and the output it replays
   * is skipped up to what was already delivered.
   */
  private wireOutput(
    proc: EnvdProcess,
    first: SandboxProcess,
    firstStderr: { markers: SupervisorMarkers; rest: AsyncIterable<string> },
  ): void {
    const sent = { stdout: 0, stderr: 0 };
    const forward = (stream: AsyncIterable<string>, kind: "stdout" | "stderr", skip: number) => {
      let skipped = 0;
      return pump(stream, async (chunk) => {
        let text = chunk;
        if (skipped < skip) {
          const drop = Math.min(skip - skipped, text.length);
          skipped += drop;
          text = text.slice(drop);
          if (text === "") return;
        }
        sent[kind] += text.length;
        await proc.deliver({ data: { [kind]: base64(text) } });
      });
    };
    const follow = async (spawned: SandboxProcess, skip: { stdout: number; stderr: number }) => {
      const out = forward(spawned.stdout, "stdout", skip.stdout);
      // A re-attached process replays its output from the start, markers included.
      const { markers, rest } = spawned === first ? firstStderr : await readSupervisedStderr(spawned.stderr);
      const err = forward(rest, "stderr", skip.stderr);
      const exit = await spawned.wait();
      await Promise.race([
        Promise.all([out, err]),
        new Promise((resolve) => setTimeout(resolve, DRAIN_GRACE_MS)),
      ]);
      // The supervisor saw how the program ended; the backend may only know "exit 137".
      return markers.exit ?? { exitCode: exit.exitCode, signal: exit.signal };
    };
    void (async () => {
      let spawned = first;
      for (let attempt = 0; ; attempt++) {
        try {
          const exit = await follow(spawned, attempt === 0 ? { stdout: 0, stderr: 0 } : { ...sent });
          proc.finish(endEventOf(exit.exitCode, exit.signal));
          return;
        } catch (error) {
          const again = attempt < 5 && !proc.outputCancelled && (await this.host.whenRunning());
          const reattached = again
            ? await this.host.machine.sandbox.commands.connect(proc.backendPid).catch(() => undefined)
            : undefined;
          if (!reattached) {
            const text = error instanceof Error ? error.message : String(error);
            proc.finish({ exitCode: -1, exited: false, status: "unknown", error: text });
            return;
          }
          spawned = reattached;
        }
      }
    })();
  }

  /** Subscribes a stream to a process until its end event is sent or the client leaves. */
  private async follow(proc: EnvdProcess, stream: ServerStream, headers: IncomingHttpHeaders): Promise<void> {
    this.host.track(stream);
    const subscriber: Subscriber = (event) => stream.send(event);
    proc.subscribers.add(subscriber);
    const interval = Number(headers["keepalive-ping-interval"] ?? 0);
    const keepalive =
      interval > 0
        ? setInterval(() => void stream.send({ event: { keepalive: {} } }), interval * 1000)
        : undefined;
    try {
      await Promise.race([proc.whenEnded(), new Promise<void>((resolve) => stream.onClose(resolve))]);
    } finally {
      if (keepalive) clearInterval(keepalive);
      proc.subscribers.delete(subscriber);
    }
  }

  /** `Connect`: output produced from now on, then the end. */
  async connect(message: ConnectMessage, stream: ServerStream, headers: IncomingHttpHeaders): Promise<void> {
    const proc = this.select(message);
    await stream.send({ event: { start: { pid: proc.pid } } });
    await this.follow(proc, stream, headers);
  }

  /** `List`: running processes with their configuration. */
  list(): ConnectMessage {
    return {
      processes: [...this.processes.values()]
        .filter((p) => !p.end)
        .map((p) => ({ config: p.config, pid: p.pid, ...(p.tag ? { tag: p.tag } : {}) })),
    };
  }

  private async write(proc: EnvdProcess, input: { stdin?: unknown; pty?: unknown }): Promise<void> {
    if (input.pty !== undefined) {
      if (!proc.pty) {
        throw new ConnectFailure(
          "internal",
          "tty not assigned to process — input should be written to the stdin, not the tty",
        );
      }
      await proc.pty.write(bytesOf(input.pty));
      return;
    }
    if (proc.pty) {
      throw new ConnectFailure(
        "internal",
        "tty assigned to process — input should be written to the pty, not the stdin",
      );
    }
    if (!proc.stdinOpen.value || !proc.process) {
      throw new ConnectFailure("internal", "stdin not enabled or closed");
    }
    const bytes = bytesOf(input.stdin);
    if (bytes.byteLength === 0) return;
    await proc.process.writeStdin(bytes).catch((error: unknown) => {
      throw new ConnectFailure("internal", `error writing to stdin: ${String(error)}`);
    });
  }

  /** `SendInput`: stdin bytes, or bytes typed into the terminal. */
  async sendInput(message: ConnectMessage): Promise<ConnectMessage> {
    const proc = this.select(message);
    await this.write(proc, (message.input ?? {}) as { stdin?: unknown; pty?: unknown });
    return {};
  }

  /** `StreamInput`: a start event naming the process, then input events, each written in order. */
  streamInput(): (message: ConnectMessage, index: number) => Promise<void> {
    let proc: EnvdProcess | undefined;
    return async (message, index) => {
      if (message.start !== undefined) {
        proc = this.select(message.start as ConnectMessage);
        return;
      }
      if (message.keepalive !== undefined) return;
      if (!proc) {
        throw new ConnectFailure(
          "failed_precondition",
          `the first StreamInput message must be a start event (got message ${index})`,
        );
      }
      const data = (message.data ?? {}) as { input?: unknown };
      await this.write(proc, (data.input ?? {}) as { stdin?: unknown; pty?: unknown });
    };
  }

  /** `CloseStdin`. */
  async closeStdin(message: ConnectMessage): Promise<ConnectMessage> {
    const proc = this.select(message);
    if (proc.pty) {
      throw new ConnectFailure("internal", "cannot close stdin for PTY process — send Ctrl+D (0x04) instead");
    }
    if (!proc.stdinOpen.value) throw new ConnectFailure("internal", "stdin not enabled or closed");
    proc.stdinOpen.value = false;
    await proc.process?.closeStdin();
    return {};
  }

  /** `SendSignal`: SIGKILL or SIGTERM. */
  async sendSignal(message: ConnectMessage): Promise<ConnectMessage> {
    const proc = this.select(message);
    const signal = signalName(message.signal);
    if (!signal) throw new ConnectFailure("unimplemented", `invalid signal: ${String(message.signal)}`);
    await this.kill(proc, signal);
    return {};
  }

  private async kill(proc: EnvdProcess, signal: "SIGKILL" | "SIGTERM"): Promise<void> {
    proc.outputCancelled = true;
    try {
      if (proc.pty) await proc.pty.kill();
      else await proc.process?.kill(signal);
    } catch (error) {
      if (proc.end) return;
      throw new ConnectFailure("internal", `error sending signal: ${String(error)}`);
    }
  }

  /** `Update`: resizes a terminal. */
  async update(message: ConnectMessage): Promise<ConnectMessage> {
    const proc = this.select(message);
    const size = (message.pty as { size?: { cols?: number; rows?: number } } | undefined)?.size;
    if (size) {
      if (!proc.pty) throw new ConnectFailure("internal", "tty not assigned to process");
      await proc.pty.resize(size.cols || 80, size.rows || 24);
    }
    return {};
  }

  /** Forgets every process (the sandbox's processes are gone: killed, or a cold boot). */
  forgetAll(): void {
    for (const proc of this.processes.values()) {
      proc.outputCancelled = true;
      proc.subscribers.clear();
    }
    this.processes.clear();
  }
}
