import { type ChildProcess, spawn } from "node:child_process";
import { type FSWatcher, watch } from "node:fs";
import { type FileHandle, mkdir, open } from "node:fs/promises";
import type { Socket } from "node:net";
import type { Writable } from "node:stream";
import type {
  DriverExecRequest,
  DriverExit,
  DriverOutputCallbacks,
  DriverProcess,
  ProcessInfo,
} from "@sbox/core/spec";
import { shellQuoteArgv } from "@sbox/core/spec";
import { type CommandSettings, type CommandTarget, type LaunchPlan, planLaunch } from "./local-command.js";
import { localError, throwIfAborted, toLocalError } from "./local-errors.js";
import { FileFollower } from "./local-follow.js";
import { newLocalId } from "./local-ids.js";
import type { ResolvedIsolation } from "./local-isolation.js";
import {
  finalExit,
  findProcessRecord,
  isRunning,
  listProcessRecords,
  type ProcessFiles,
  type ProcessMeta,
  processFiles,
  recordedExitCode,
  recordKill,
  writeProcessMeta,
} from "./local-process-records.js";
import {
  COMMAND_TAG_VARIABLE,
  isProcessAlive,
  readProcStat,
  SANDBOX_TAG_VARIABLE,
  signalTree,
} from "./local-procfs.js";

/**
 * The wrapper every background command runs under, on the host: it waits for the command and writes its
 * exit code next to the output files. Catchable signals are trapped (not ignored, which children would
 * inherit) so that a `kill -TERM` of the group still lets it record how the command ended. Only shell
 * builtins, so a user's PATH cannot break it.
 */
const WRAPPER =
  'rec=$1; shift; trap : HUP INT TERM QUIT USR1 USR2 ALRM; "$@"; code=$?; printf "%s\\n" "$code" >"$rec/exit"; exit "$code"';

const LIVENESS_POLL_MS = 100;

/** Background processes this host program follows; `dispose()` lets go of them. */
export class ProcessRegistry {
  private readonly live = new Set<BackgroundProcess>();

  add(process: BackgroundProcess): void {
    this.live.add(process);
  }

  delete(process: BackgroundProcess): void {
    this.live.delete(process);
  }

  /** Stops following every process (they keep running) so the host program can exit. */
  detachAll(): void {
    for (const process of this.live) process.detach();
    this.live.clear();
  }
}

function displayCommand(request: DriverExecRequest): string {
  return "shell" in request.command ? request.command.shell : shellQuoteArgv(request.command.argv);
}

/** What a process handle needs from the provider. */
export interface BackgroundContext {
  readonly settings: CommandSettings;
  readonly isolation: ResolvedIsolation;
  readonly registry: ProcessRegistry;
}

/** A background process followed by this host program: its output files are tailed until it ends. */
class BackgroundProcess implements DriverProcess {
  readonly pid: number;
  private readonly out: FileFollower;
  private readonly err: FileFollower;
  private readonly exited: Promise<DriverExit>;
  private pipe: Writable | undefined;
  private reopened: FileHandle | undefined;
  private stdinClosed = false;
  private watcher: FSWatcher | undefined;
  private poll: ReturnType<typeof setTimeout> | undefined;
  private wakeEnded: (() => void) | undefined;

  constructor(
    private readonly context: BackgroundContext,
    private readonly files: ProcessFiles,
    private readonly meta: ProcessMeta,
    output: DriverOutputCallbacks,
    private readonly child?: ChildProcess | undefined,
  ) {
    this.pid = meta.pid;
    this.out = new FileFollower(files.stdout, (chunk) => output.onStdout(chunk));
    this.err = new FileFollower(files.stderr, (chunk) => output.onStderr(chunk));
    this.out.start();
    this.err.start();
    // A pipe that was already ended (stdin given as bytes) cannot be written again.
    if (child?.stdin && !child.stdin.writableEnded) this.pipe = child.stdin;
    else if (child) this.stdinClosed = true;
    const ended = child ? this.childEnded(child) : this.recordEnded().then(() => undefined);
    this.exited = ended.then(async (wrapperExit) => {
      await Promise.all([this.out.finish(), this.err.finish()]);
      this.context.registry.delete(this);
      return finalExit(this.files, wrapperExit);
    });
    this.exited.catch(() => {});
    context.registry.add(this);
  }

  private childEnded(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        resolve({ code: child.exitCode, signal: child.signalCode });
        return;
      }
      child.once("exit", (code, signal) => resolve({ code, signal }));
    });
  }

  /** Without the child handle (another host program started it): watch for the exit record, poll the pid. */
  private recordEnded(): Promise<void> {
    return new Promise<void>((resolve) => {
      let done = false;
      const check = async () => {
        if (done) return;
        const ended =
          (await recordedExitCode(this.files)) !== undefined ||
          !(await isProcessAlive(this.meta.pid, this.meta.startTime));
        if (done) return;
        if (ended) {
          done = true;
          this.watcher?.close();
          if (this.poll) clearTimeout(this.poll);
          resolve();
          return;
        }
        this.poll = setTimeout(() => void check(), LIVENESS_POLL_MS);
      };
      this.wakeEnded = () => {
        if (this.poll) clearTimeout(this.poll);
        void check();
      };
      try {
        this.watcher = watch(this.files.dir, { persistent: false }, () => this.wakeEnded?.());
        this.watcher.on("error", () => {});
      } catch {
        this.watcher = undefined;
      }
      void check();
    });
  }

  wait(): Promise<DriverExit> {
    return this.exited;
  }

  kill(signal = "SIGKILL"): Promise<void> {
    return killRecordedProcess(this.context, this.files, this.meta, signal);
  }

  async writeStdin(data: Uint8Array): Promise<void> {
    if (this.pipe) {
      const pipe = this.pipe;
      await new Promise<void>((resolve, reject) => {
        pipe.write(data, (error) => (error ? reject(toLocalError(error, "process.writeStdin")) : resolve()));
      });
      return;
    }
    const reopened = await this.reopenStdin();
    await reopened.write(data);
  }

  async closeStdin(): Promise<void> {
    const pipe = this.pipe;
    const reopened = this.reopened;
    this.pipe = undefined;
    this.reopened = undefined;
    this.stdinClosed = true;
    if (pipe) await new Promise<void>((resolve) => pipe.end(() => resolve()));
    if (reopened) await reopened.close();
  }

  /**
   * For a process this program did not start (or whose pipe it already closed): the same pipe, reopened for
   * writing through `/proc/<pid>/fd/0` of its wrapper.
   */
  private async reopenStdin(): Promise<FileHandle> {
    if (this.reopened) return this.reopened;
    if (this.stdinClosed) throw localError("InvalidState", `the stdin of process ${this.pid} was closed`);
    if (!(await isRunning(this.files, this.meta))) {
      throw localError("InvalidState", `process ${this.pid} has ended; its stdin is closed`);
    }
    try {
      this.reopened = await open(`/proc/${this.meta.pid}/fd/0`, "w");
    } catch (error) {
      throw localError(
        "InvalidState",
        `the stdin of process ${this.pid} cannot be reopened from this program`,
        error,
      );
    }
    return this.reopened;
  }

  /** Stops following; the process itself keeps running. */
  detach(): void {
    this.out.stop();
    this.err.stop();
    this.watcher?.close();
    if (this.poll) clearTimeout(this.poll);
    this.wakeEnded = undefined;
    this.child?.unref();
    (this.pipe as Socket | undefined)?.unref?.();
  }
}

/** Signals a recorded process and its whole tree; a process that already ended is left alone. */
export async function killRecordedProcess(
  context: BackgroundContext,
  files: ProcessFiles,
  meta: ProcessMeta,
  signal: string,
): Promise<void> {
  const alive = await isProcessAlive(meta.pid, meta.startTime);
  if (!alive && (await recordedExitCode(files)) !== undefined) return;
  await recordKill(files, signal);
  await signalTree({ name: COMMAND_TAG_VARIABLE, value: meta.token }, signal, {
    groups: alive ? [meta.pid] : [],
    // The wrapper must live to record the exit; bubblewrap's monitor would die and orphan the command.
    spare: {
      pids: [meta.pid],
      exe: context.isolation.mode === "bwrap" ? context.isolation.bwrapPath : undefined,
    },
  });
}

/** A command that only reports a failed `cd`, so a bad cwd fails the same way as under bubblewrap. */
function failingPlan(
  settings: CommandSettings,
  plan: LaunchPlan | { cwdProblem: string },
  fallbackCwd: string,
  env: Record<string, string>,
): LaunchPlan {
  if (!("cwdProblem" in plan)) return plan;
  return {
    file: settings.shell,
    args: ["-c", 'printf "%s" "$1" >&2; exit 1', "sh", plan.cwdProblem],
    cwd: fallbackCwd,
    env,
  };
}

/**
 * Starts a background command: detached into its own session and process group (so it survives this
 * program), output appended to files in the sandbox's state directory, exit code recorded by the wrapper.
 * Under bubblewrap it runs without `--die-with-parent`.
 */
export async function spawnBackground(
  context: BackgroundContext,
  target: CommandTarget,
  request: DriverExecRequest & DriverOutputCallbacks,
): Promise<DriverProcess> {
  throwIfAborted(request.signal, "spawn");
  if (request.stdin !== undefined && !(request.stdin instanceof Uint8Array)) {
    throw localError("Validation", "spawn takes stdin as bytes; write more with writeStdin()");
  }
  const token = newLocalId();
  const files = processFiles(target.paths.procs, token);
  const planned = planLaunch(context.settings, context.isolation, target, {
    command: request.command,
    cwd: request.cwd,
    env: request.env,
    user: request.user,
    tag: token,
    foreground: false,
  });
  const fallbackEnv =
    "cwdProblem" in planned
      ? { PATH: context.settings.path, [SANDBOX_TAG_VARIABLE]: target.id, [COMMAND_TAG_VARIABLE]: token }
      : planned.env;
  const plan = failingPlan(context.settings, planned, target.paths.workspace, fallbackEnv);
  await mkdir(files.dir, { mode: 0o700 });
  const stdout = await open(files.stdout, "a", 0o600);
  const stderr = await open(files.stderr, "a", 0o600);
  let child: ChildProcess;
  try {
    child = spawn(
      context.settings.shell,
      ["-c", WRAPPER, "sbox-process", files.dir, plan.file, ...plan.args],
      {
        cwd: plan.cwd,
        env: plan.env,
        stdio: ["pipe", stdout.fd, stderr.fd],
        detached: true,
      },
    );
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
  } catch (error) {
    throw localError(
      "Provider",
      `could not start the background command: ${(error as Error).message}`,
      error,
    );
  } finally {
    await Promise.all([stdout.close(), stderr.close()]);
  }
  const pid = child.pid!;
  const stat = await readProcStat(pid);
  const meta: ProcessMeta = {
    version: 1,
    token,
    pid,
    startTime: stat?.startTime,
    command: displayCommand(request),
    startedAt: new Date().toISOString(),
  };
  await writeProcessMeta(files, meta);
  child.stdin?.on("error", () => {});
  if (request.stdin instanceof Uint8Array) child.stdin?.end(request.stdin);
  return new BackgroundProcess(context, files, meta, request, child);
}

/** Re-attaches to a background process by pid: replays its output from the start, then follows it. */
export async function connectBackground(
  context: BackgroundContext,
  target: CommandTarget,
  pid: number,
  output: DriverOutputCallbacks,
): Promise<DriverProcess> {
  const record = await findProcessRecord(target.paths.procs, pid);
  if (!record) throw localError("NotFound", `no background process ${pid} in local sandbox ${target.id}`);
  return new BackgroundProcess(context, record.files, record.meta, output);
}

/** Lists the background processes of a sandbox, oldest first. */
export async function listBackground(target: CommandTarget): Promise<ProcessInfo[]> {
  const records = await listProcessRecords(target.paths.procs);
  return Promise.all(
    records.map(async ({ files, meta }) => {
      const running = await isRunning(files, meta);
      const info: ProcessInfo = { pid: meta.pid, command: meta.command, running };
      if (!running) {
        const exit = await finalExit(files);
        if (exit.exitCode !== undefined) info.exitCode = exit.exitCode;
      }
      return info;
    }),
  );
}

/** Kills a background process (and its tree) by pid. */
export async function killBackground(
  context: BackgroundContext,
  target: CommandTarget,
  pid: number,
  signal: string,
): Promise<void> {
  const record = await findProcessRecord(target.paths.procs, pid);
  if (!record) throw localError("NotFound", `no background process ${pid} in local sandbox ${target.id}`);
  await killRecordedProcess(context, record.files, record.meta, signal);
}

/** Records every running background process of a sandbox as killed with `signal` (before a stop). */
export async function markAllKilled(target: CommandTarget, signal: string): Promise<void> {
  const records = await listProcessRecords(target.paths.procs);
  await Promise.all(
    records.map(async ({ files, meta }) => {
      if (await isRunning(files, meta)) await recordKill(files, signal);
    }),
  );
}
