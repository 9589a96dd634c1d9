/**
 * Commands of a session (`POST /v2/sandboxes/sessions/:id/cmd`): each one a background process of the
 * session's backend sandbox. The service keeps a command's output: `GET .../cmd/:cmdId/logs` replays it
 * from the start and then follows it live, as NDJSON lines `{"stream":"stdout"|"stderr","data":"..."}`,
 * until the command ends; several readers may follow one command at once. A session that stops while a
 * command streams ends the stream with `{"stream":"error","data":{"code":"sandbox_stopped",...}}`.
 * Exit codes follow the shell's convention for signals (128 + n: SIGTERM 143, SIGKILL 137), and a
 * command's `timeout` kills it with SIGKILL, as the service does.
 */
import { randomBytes } from "node:crypto";
import type { AnyCapabilities, Sandbox, SandboxProcess } from "@sbox/core";
import type { EmulatorClock, EmulatorTimer } from "../clock.js";
import { launchOf, type VercelLayout } from "./vercel-user.js";

/** One line of a command's log. */
export type VercelLogLine =
  | { readonly stream: "stdout" | "stderr"; readonly data: string }
  | { readonly stream: "error"; readonly data: { readonly code: string; readonly message: string } };

/** Linux signal numbers, both ways. */
const SIGNALS: Readonly<Record<string, number>> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGABRT: 6,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGSEGV: 11,
  SIGUSR2: 12,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
  SIGCONT: 18,
  SIGSTOP: 19,
  SIGTSTP: 20,
};

/** The signal name for a number (`15` → `SIGTERM`), `undefined` for one the emulator does not know. */
export function signalName(value: number): string | undefined {
  return Object.entries(SIGNALS).find(([, n]) => n === value)?.[0];
}

function exitCodeOf(exit: { exitCode: number; signal?: string | undefined }): number {
  if (exit.signal !== undefined && SIGNALS[exit.signal] !== undefined) return 128 + SIGNALS[exit.signal]!;
  return exit.exitCode;
}

/** What a command is started with. */
export interface VercelCommandRequest {
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs?: number | undefined;
  /** Run as root (the API's `sudo`) rather than as the session's user. */
  readonly sudo?: boolean | undefined;
}

/** A command of a session: its process, its kept output, its exit. */
export class VercelCommand {
  readonly id: string = `cmd_${randomBytes(12).toString("hex")}`;
  readonly startedAt: number;
  exitCode: number | null = null;
  durationMs: number | undefined;
  /** Every line so far, in order. */
  readonly lines: VercelLogLine[] = [];
  private readonly waiters = new Set<() => void>();
  private ended = false;
  private timer: EmulatorTimer | undefined;
  private readonly finished: Promise<void>;

  private constructor(
    readonly sessionId: string,
    readonly request: VercelCommandRequest,
    private readonly process: SandboxProcess,
    private readonly clock: EmulatorClock,
  ) {
    this.startedAt = clock.now();
    if (request.timeoutMs !== undefined) {
      this.timer = clock.setTimer(() => void this.kill(9).catch(() => undefined), request.timeoutMs);
    }
    const pump = async (stream: AsyncIterable<string>, kind: "stdout" | "stderr") => {
      try {
        for await (const data of stream) if (data !== "") this.push({ stream: kind, data });
      } catch {
        // The process is gone with the session: its exit (or the session's stop) ends the log.
      }
    };
    this.finished = (async () => {
      const drained = Promise.all([pump(process.stdout, "stdout"), pump(process.stderr, "stderr")]);
      let code: number;
      try {
        code = exitCodeOf(await process.wait());
      } catch {
        code = 137;
      }
      await drained;
      this.finish(code);
    })();
  }

  /**
   * Starts `request` in `sandbox` as the session's layout says (its user, or root for `sudo`); rejects when
   * the backend cannot start it (a missing binary, a bad cwd).
   */
  static async start(
    sandbox: Sandbox<AnyCapabilities>,
    sessionId: string,
    request: VercelCommandRequest,
    clock: EmulatorClock,
    layout: VercelLayout,
  ): Promise<VercelCommand> {
    const { argv, env } = launchOf(layout, { ...request, sudo: request.sudo === true });
    const process = await sandbox.commands.spawn(argv, { cwd: request.cwd, env });
    return new VercelCommand(sessionId, request, process, clock);
  }

  private push(line: VercelLogLine): void {
    this.lines.push(line);
    for (const wake of [...this.waiters]) wake();
  }

  private finish(code: number): void {
    if (this.ended) return;
    this.ended = true;
    this.timer?.cancel();
    this.exitCode = code;
    this.durationMs = Math.max(0, this.clock.now() - this.startedAt);
    for (const wake of [...this.waiters]) wake();
  }

  /** True once the command ended (its exit code is known). */
  get done(): boolean {
    return this.ended;
  }

  /** Resolves when the command has ended. */
  whenDone(): Promise<void> {
    return this.finished;
  }

  /** The API's `Command` object. */
  toJSON(): Record<string, unknown> {
    return {
      id: this.id,
      name: this.request.command,
      args: [...this.request.args],
      cwd: this.request.cwd,
      sessionId: this.sessionId,
      exitCode: this.exitCode,
      ...(this.durationMs === undefined ? {} : { durationMs: this.durationMs }),
      startedAt: this.startedAt,
    };
  }

  /** Sends `signal` (a number) to the command's process tree. */
  async kill(signal: number): Promise<void> {
    if (this.ended) return;
    const name = signalName(signal) ?? "SIGTERM";
    await this.process.kill(name).catch(() => undefined);
  }

  /** Ends the command because its session stopped: the process is killed and followers get the error line. */
  abandon(code: string, message: string): void {
    if (this.ended) return;
    void this.process.kill("SIGKILL").catch(() => undefined);
    this.push({ stream: "error", data: { code, message } });
    this.finish(137);
  }

  /**
   * Every line from the start, then new ones as they come, until the command ends or `signal` fires. The
   * error line of an abandoned command is the last one.
   */
  async *follow(signal: AbortSignal): AsyncGenerator<VercelLogLine> {
    let next = 0;
    while (!signal.aborted) {
      while (next < this.lines.length) {
        const line = this.lines[next++]!;
        yield line;
        if (line.stream === "error") return;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.waiters.delete(wake);
          signal.removeEventListener("abort", wake);
          resolve();
        };
        this.waiters.add(wake);
        signal.addEventListener("abort", wake, { once: true });
      });
    }
  }
}
