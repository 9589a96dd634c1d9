/**
 * `process.Process` of the test envd, from spec/envd/process/process.proto: Start and Connect stream
 * ProcessEvents (start, data, end, keepalive), List, SendInput, SendSignal, CloseStdin and Update are unary.
 * Commands are real processes of this machine (PTYs through node-pty). Like envd, a signal reaches only the
 * process that was started, `Connect-Timeout-Ms` kills it with SIGKILL, and a process that ended is
 * forgotten (List shows running ones only).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import { constants } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { ConnectFailure, type ServerStream } from "./e2b-test-connect-protocol.js";
import { endEventOf } from "./e2b-test-go-exit.js";
import { SANDBOX_MARKER } from "./e2b-test-procfs.js";
import { requestUser, type TestUser } from "./e2b-test-users.js";

/** What the process service needs to know about its sandbox. */
export interface ProcessHost {
  readonly id: string;
  /** Default working directory and home of the sandbox's user. */
  readonly home: string;
  /** Default user name. */
  readonly defaultUser: string;
  /** Environment given at create. */
  readonly envVars: Readonly<Record<string, string>>;
}

type EventMessage = Record<string, unknown>;

interface Subscriber {
  send(event: EventMessage): Promise<void>;
}

interface PtyLike {
  write(data: string | Buffer): void;
  resize(cols: number, rows: number): void;
  onData(listener: (data: string | Buffer) => void): void;
  onExit(listener: (exit: { exitCode: number; signal?: number }) => void): void;
  readonly pid: number;
}

/**
 * After a process exits its pipes normally reach end-of-file at once. When a child it left behind still
 * holds them open, the end is reported after this long without output (Go's Wait does not wait for it).
 */
const DRAIN_QUIET_MS = 1_000;

class TestProcess {
  readonly subscribers: Set<Subscriber> = new Set();
  end: EventMessage | undefined;
  private readonly endWaiters: (() => void)[] = [];
  private pending: Promise<unknown> = Promise.resolve();
  private paused = 0;

  constructor(
    readonly pid: number,
    readonly config: Record<string, unknown>,
    readonly tag: string | undefined,
    readonly child: ChildProcess | undefined,
    readonly pty: PtyLike | undefined,
  ) {}

  /** Delivers one event to every subscriber in order; output is paused while a subscriber is slow. */
  deliver(event: EventMessage): void {
    const sends = [...this.subscribers].map((s) => s.send({ event }));
    const all = Promise.all(sends);
    this.pending = this.pending.then(() => all);
    this.paused++;
    this.child?.stdout?.pause();
    this.child?.stderr?.pause();
    void all.then(() => {
      this.paused--;
      if (this.paused === 0) {
        this.child?.stdout?.resume();
        this.child?.stderr?.resume();
      }
    });
  }

  get isPaused(): boolean {
    return this.paused > 0;
  }

  finish(end: EventMessage): void {
    if (this.end) return;
    this.end = end;
    void this.pending.then(() => {
      for (const s of [...this.subscribers]) void s.send({ event: { end } });
      for (const waiter of this.endWaiters.splice(0)) waiter();
    });
  }

  whenEnded(): Promise<void> {
    if (this.end) return this.pending.then(() => undefined);
    return new Promise((resolve) => this.endWaiters.push(resolve));
  }
}

function selectorPid(message: Record<string, unknown>, processes: Map<number, TestProcess>): TestProcess {
  const selector = (message.process ?? {}) as { pid?: unknown; tag?: unknown };
  if (typeof selector.tag === "string") {
    for (const p of processes.values()) if (p.tag === selector.tag) return p;
    throw new ConnectFailure("not_found", `process with tag ${selector.tag} not found`);
  }
  const pid = Number(selector.pid ?? 0);
  const found = processes.get(pid);
  if (!found) throw new ConnectFailure("not_found", `process with pid ${pid} not found`);
  return found;
}

function bytesOf(value: unknown): Buffer {
  return typeof value === "string" ? Buffer.from(value, "base64") : Buffer.alloc(0);
}

function signalName(value: unknown): NodeJS.Signals | undefined {
  if (value === "SIGNAL_SIGKILL" || value === 9) return "SIGKILL";
  if (value === "SIGNAL_SIGTERM" || value === 15) return "SIGTERM";
  return undefined;
}

function expand(path: string, user: TestUser, home: string): string {
  const userHome = user.name === "root" ? home : user.home;
  if (path === "~") return userHome;
  if (path.startsWith("~/")) return join(userHome, path.slice(2));
  return isAbsolute(path) ? resolve(path) : resolve(home, path);
}

/** The process service of one sandbox. */
export class ProcessService {
  readonly processes: Map<number, TestProcess> = new Map();

  constructor(private readonly host: ProcessHost) {}

  private environment(user: TestUser, envs: Record<string, string>): Record<string, string> {
    return {
      PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
      HOME: user.name === "root" ? this.host.home : user.home,
      USER: user.name,
      LOGNAME: user.name,
      ...this.host.envVars,
      ...envs,
      [SANDBOX_MARKER]: this.host.id,
    };
  }

  /** `Start`: runs the process and streams its events until it ends or the client goes away. */
  async start(
    message: Record<string, unknown>,
    stream: ServerStream,
    headers: IncomingHttpHeaders,
  ): Promise<void> {
    const user = requestUser(headers.authorization, this.host.defaultUser);
    const config = (message.process ?? {}) as {
      cmd?: unknown;
      args?: unknown;
      envs?: unknown;
      cwd?: unknown;
    };
    const cmd = typeof config.cmd === "string" ? config.cmd : "";
    const args = Array.isArray(config.args) ? config.args.map(String) : [];
    const envs = (typeof config.envs === "object" && config.envs ? config.envs : {}) as Record<
      string,
      string
    >;
    const cwd =
      typeof config.cwd === "string" && config.cwd !== ""
        ? expand(config.cwd, user, this.host.home)
        : this.host.home;
    if (!existsSync(cwd) || !statSync(cwd).isDirectory()) {
      throw new ConnectFailure("invalid_argument", `cwd '${cwd}' does not exist`);
    }
    const env = this.environment(user, envs);
    const ids = process.getuid?.() === 0 ? { uid: user.uid, gid: user.gid } : {};
    const ptyRequest = message.pty as { size?: { cols?: number; rows?: number } } | undefined;
    const stdinWanted = message.stdin === undefined || message.stdin === true;
    let proc: TestProcess;
    if (ptyRequest) {
      const nodePty = (await import("node-pty")) as unknown as {
        spawn(file: string, args: string[], options: Record<string, unknown>): PtyLike;
      };
      const term = nodePty.spawn(cmd, args, {
        name: env.TERM ?? "xterm-256color",
        cols: ptyRequest.size?.cols ?? 80,
        rows: ptyRequest.size?.rows ?? 24,
        cwd,
        env,
        ...ids,
      });
      proc = new TestProcess(term.pid, config, message.tag as string | undefined, undefined, term);
      term.onData((data) => proc.deliver({ data: { pty: Buffer.from(data).toString("base64") } }));
      term.onExit(({ exitCode, signal }) => {
        const name = signal
          ? Object.entries(constants.signals).find(([, n]) => n === signal)?.[0]
          : undefined;
        setTimeout(() => proc.finish(endEventOf(exitCode, name ?? null)), 20);
      });
    } else {
      const child = spawn(cmd, args, {
        cwd,
        env,
        ...ids,
        stdio: [stdinWanted ? "pipe" : "ignore", "pipe", "pipe"],
      });
      if (child.pid === undefined) {
        const error = await new Promise<Error>((resolve) => child.once("error", resolve));
        throw new ConnectFailure(
          "invalid_argument",
          `error starting process '${[cmd, ...args].join(" ")}': ${error.message}`,
        );
      }
      child.stdin?.on("error", () => {});
      proc = new TestProcess(child.pid, config, message.tag as string | undefined, child, undefined);
      this.wireChild(proc, child);
    }
    this.processes.set(proc.pid, proc);
    void proc.whenEnded().then(() => this.processes.delete(proc.pid));
    const timeout = Number(headers["connect-timeout-ms"] ?? 0);
    if (timeout > 0) {
      const timer = setTimeout(() => this.signal(proc, "SIGKILL"), timeout);
      void proc.whenEnded().then(() => clearTimeout(timer));
    }
    await stream.send({ event: { start: { pid: proc.pid } } });
    await this.follow(proc, stream, headers);
  }

  private wireChild(proc: TestProcess, child: ChildProcess): void {
    let lastData = Date.now();
    let outEnded = false;
    let errEnded = false;
    child.stdout?.on("data", (chunk: Buffer) => {
      lastData = Date.now();
      proc.deliver({ data: { stdout: chunk.toString("base64") } });
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      lastData = Date.now();
      proc.deliver({ data: { stderr: chunk.toString("base64") } });
    });
    child.stdout?.on("end", () => (outEnded = true));
    child.stderr?.on("end", () => (errEnded = true));
    child.on("exit", (code, signal) => {
      const end = endEventOf(code, signal);
      // Like Go's Wait, the end does not wait for grandchildren that keep the pipes open: what is in the
      // pipes arrives, then the pipes are closed.
      const check = setInterval(() => {
        const quiet = !proc.isPaused && Date.now() - lastData > DRAIN_QUIET_MS;
        if ((outEnded && errEnded) || quiet) {
          clearInterval(check);
          child.stdout?.destroy();
          child.stderr?.destroy();
          child.stdin?.destroy();
          proc.finish(end);
        }
      }, 10);
    });
  }

  /** Subscribes a stream to a process until its end event is sent or the client leaves. */
  private async follow(proc: TestProcess, stream: ServerStream, headers: IncomingHttpHeaders): Promise<void> {
    const subscriber: Subscriber = { send: (event) => stream.send(event) };
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
  async connect(
    message: Record<string, unknown>,
    stream: ServerStream,
    headers: IncomingHttpHeaders,
  ): Promise<void> {
    const proc = selectorPid(message, this.processes);
    await stream.send({ event: { start: { pid: proc.pid } } });
    await this.follow(proc, stream, headers);
  }

  /** `List`: running processes with their configuration. */
  list(): Record<string, unknown> {
    return {
      processes: [...this.processes.values()]
        .filter((p) => !p.end)
        .map((p) => ({ config: p.config, pid: p.pid, ...(p.tag ? { tag: p.tag } : {}) })),
    };
  }

  /** `SendInput`: stdin bytes, or bytes typed into the terminal. */
  sendInput(message: Record<string, unknown>): Record<string, unknown> {
    const proc = selectorPid(message, this.processes);
    const input = (message.input ?? {}) as { stdin?: unknown; pty?: unknown };
    if (input.pty !== undefined) {
      if (!proc.pty)
        throw new ConnectFailure(
          "internal",
          "tty not assigned to process — input should be written to the stdin, not the tty",
        );
      proc.pty.write(bytesOf(input.pty));
      return {};
    }
    if (proc.pty)
      throw new ConnectFailure(
        "internal",
        "tty assigned to process — input should be written to the pty, not the stdin",
      );
    const stdin = proc.child?.stdin;
    if (!stdin || stdin.destroyed || stdin.writableEnded)
      throw new ConnectFailure("internal", "stdin not enabled or closed");
    stdin.write(bytesOf(input.stdin));
    return {};
  }

  /** `CloseStdin`. */
  closeStdin(message: Record<string, unknown>): Record<string, unknown> {
    const proc = selectorPid(message, this.processes);
    if (proc.pty)
      throw new ConnectFailure("internal", "cannot close stdin for PTY process — send Ctrl+D (0x04) instead");
    proc.child?.stdin?.end();
    return {};
  }

  /** `SendSignal`: SIGKILL or SIGTERM to the process itself (not its children), as envd does. */
  sendSignal(message: Record<string, unknown>): Record<string, unknown> {
    const proc = selectorPid(message, this.processes);
    const signal = signalName(message.signal);
    if (!signal) throw new ConnectFailure("unimplemented", `invalid signal: ${String(message.signal)}`);
    this.signal(proc, signal);
    return {};
  }

  private signal(proc: TestProcess, signal: NodeJS.Signals): void {
    try {
      process.kill(proc.pid, signal);
    } catch (error) {
      throw new ConnectFailure("internal", `error sending signal: ${String(error)}`);
    }
  }

  /** `Update`: resizes a terminal. */
  update(message: Record<string, unknown>): Record<string, unknown> {
    const proc = selectorPid(message, this.processes);
    const size = (message.pty as { size?: { cols?: number; rows?: number } } | undefined)?.size;
    if (size) {
      if (!proc.pty) throw new ConnectFailure("internal", "tty not assigned to process");
      proc.pty.resize(size.cols ?? 80, size.rows ?? 24);
    }
    return {};
  }
}
