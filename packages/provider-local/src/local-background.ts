import { type ChildProcess, execFile, spawn } from "node:child_process";
import { constants, type FSWatcher, open as openFd, watch } from "node:fs";
import { access, lstat, mkdir, open, rmdir, writeFile } from "node:fs/promises";
import { Socket } from "node:net";
import type {
  DriverExecRequest,
  DriverExit,
  DriverOutputCallbacks,
  DriverProcess,
  ProcessInfo,
} from "@sbox/core/spec";
import { shellQuoteArgv } from "@sbox/core/spec";
import { type CommandTarget, finderForCommand, type LaunchPlan } from "./local-command.js";
import { localError, throwIfAborted, toLocalError } from "./local-errors.js";
import { type CommandContext, cleanUpLaunch, planCommand } from "./local-exec.js";
import { FileFollower } from "./local-follow.js";
import { liveHolder } from "./local-holder.js";
import { newLocalId } from "./local-ids.js";
import { recordedCgroup, SYSTEM_PATH } from "./local-launch.js";
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
  type ProcessFinder,
  readProcStat,
  SANDBOX_TAG_VARIABLE,
  signalTree,
} from "./local-procfs.js";

/**
 * The wrapper every background command runs under, on the host: it opens the command's stdin (the
 * record's FIFO, or a file with the bytes given at spawn) once and keeps it, waits for the command and writes its exit code next to the output files. Catchable signals are
 * trapped (not ignored, which children would inherit) so that a `kill -TERM` of the group still lets it
 * record how the command ended. Only shell builtins, so a user's PATH cannot break it.
 *
 * Under bubblewrap (`$2` > 0) the command reports its start on fd 4 (the `ready` file) and takes its stderr
 * from fd 5, while bubblewrap's own messages go to the `setup` file: a start that failed in bubblewrap is
 * retried up to `$2` times, and only when the last one fails too do its messages reach stderr. A start that
 * was killed (the `killed` record exists: it is written before any signal is sent) is never retried: the
 * signal, not bubblewrap, ended it before it could report.
 */
const WRAPPER = [
  'rec=$1; retries=$2; shift 2; exec 0<"$rec/stdin"; : >"$rec/opened"; trap : HUP INT TERM QUIT USR1 USR2 ALRM; n=0',
  "while :; do",
  '  if [ "$retries" -gt 0 ]; then : >"$rec/ready"; : >"$rec/setup"; "$@" 4>>"$rec/ready" 5>&2 2>>"$rec/setup"; else "$@"; fi',
  "  code=$?",
  '  if [ "$retries" -eq 0 ] || [ -s "$rec/ready" ] || [ -e "$rec/killed" ] || [ "$n" -ge "$retries" ]; then break; fi',
  "  n=$((n+1))",
  "done",
  'if [ "$retries" -gt 0 ] && [ ! -s "$rec/ready" ]; then while IFS= read -r line; do printf "%s\\n" "$line" >&2; done <"$rec/setup"; fi',
  // The start's arguments hold the command's environment: emptied once the command has ended.
  'for f in "$rec"/*.args; do [ -f "$f" ] && : >"$f"; done',
  'printf "%s\\n" "$code" >"$rec/exit"; exit "$code"',
].join("\n");

/** How often a background command is started again when bubblewrap fails to set its sandbox up. */
const SETUP_RETRIES = 4;

const LIVENESS_POLL_MS = 100;
/** How long a catchable signal waits for the command to exist when sent right after the spawn. */
const CATCHABLE_RETRY_MS = 3_000;

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
export interface BackgroundContext extends CommandContext {
  readonly registry: ProcessRegistry;
}

/** A background process followed by this host program: its output files are tailed until it ends. */
class BackgroundProcess implements DriverProcess {
  readonly pid: number;
  private readonly out: FileFollower;
  private readonly err: FileFollower;
  private readonly exited: Promise<DriverExit>;
  private stdin: Socket | undefined;
  private stdinClosed = false;
  private ended = false;
  private watcher: FSWatcher | undefined;
  private poll: ReturnType<typeof setTimeout> | undefined;
  private wakeEnded: (() => void) | undefined;

  constructor(
    private readonly context: BackgroundContext,
    private readonly files: ProcessFiles,
    private readonly meta: ProcessMeta,
    private readonly find: ProcessFinder,
    group: string | undefined,
    output: DriverOutputCallbacks,
    private readonly child?: ChildProcess | undefined,
    stdin?: Socket | undefined,
  ) {
    this.pid = meta.pid;
    this.out = new FileFollower(files.stdout, (chunk) => output.onStdout(chunk));
    this.err = new FileFollower(files.stderr, (chunk) => output.onStderr(chunk));
    this.out.start();
    this.err.start();
    // A writer that was already ended (stdin given as bytes) cannot be written again.
    if (stdin && !stdin.writableEnded) this.stdin = stdin;
    else if (stdin) this.stdinClosed = true;
    const ended = child ? this.childEnded(child) : this.recordEnded().then(() => undefined);
    this.exited = ended.then(async (wrapperExit) => {
      this.ended = true;
      // Its cgroup goes once nothing of it is left in there (a detached child keeps it until destroy).
      if (group !== undefined) void rmdir(group).catch(() => {});
      this.stdin?.destroy();
      this.stdin = undefined;
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
    return killRecordedProcess(this.context, this.files, this.meta, this.find, signal);
  }

  async writeStdin(data: Uint8Array): Promise<void> {
    if (this.ended) throw localError("InvalidState", `process ${this.pid} has ended; its stdin is closed`);
    const writer = this.stdin ?? (await this.openStdin());
    await new Promise<void>((resolve, reject) => {
      writer.write(data, (error) => (error ? reject(toLocalError(error, "process.writeStdin")) : resolve()));
    });
  }

  async closeStdin(): Promise<void> {
    const writer = this.stdin;
    this.stdin = undefined;
    this.stdinClosed = true;
    if (!writer || writer.destroyed) return;
    await stdinOpened(this.files, async () => this.ended || !(await isRunning(this.files, this.meta)));
    await new Promise<void>((resolve) => writer.end(() => resolve()));
  }

  /**
   * For a process this program did not start: its stdin FIFO, opened for writing. The process sees end of
   * input once every writer is closed, also the one of the program that started it.
   */
  private async openStdin(): Promise<Socket> {
    if (this.stdinClosed) throw localError("InvalidState", `the stdin of process ${this.pid} was closed`);
    if (!(await isRunning(this.files, this.meta))) {
      throw localError("InvalidState", `process ${this.pid} has ended; its stdin is closed`);
    }
    const kind = await lstat(this.files.stdin).catch(() => undefined);
    if (!kind?.isFIFO()) {
      throw localError("InvalidState", `the stdin of process ${this.pid} was given at spawn and is closed`);
    }
    try {
      this.stdin = await openFifoWriter(this.files.stdin, constants.O_WRONLY);
    } catch (error) {
      // ENXIO: nobody reads the FIFO any more; the command closed its stdin or is gone.
      throw localError("InvalidState", `the stdin of process ${this.pid} is closed`, error);
    }
    return this.stdin;
  }

  /** Stops following; the process itself keeps running. */
  detach(): void {
    this.out.stop();
    this.err.stop();
    this.watcher?.close();
    if (this.poll) clearTimeout(this.poll);
    this.wakeEnded = undefined;
    this.child?.unref();
    this.stdin?.unref();
  }
}

/** Creates the FIFO a background command reads its stdin from. */
function makeFifo(path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile("mkfifo", ["-m", "600", path], { timeout: 10_000 }, (error) =>
      error
        ? reject(
            localError("Provider", `could not create a FIFO for stdin (mkfifo): ${error.message}`, error),
          )
        : resolve(),
    );
  });
}

/** Opens a FIFO without blocking and wraps it in a stream with backpressure (writes never block a thread). */
function openFifoWriter(path: string, mode: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    openFd(path, mode | constants.O_NONBLOCK, (error, fd) => {
      if (error) return reject(error);
      const socket = new Socket({ fd, readable: false, writable: true });
      socket.on("error", () => {});
      resolve(socket);
    });
  });
}

function retriesUsed(context: CommandContext, planned: LaunchPlan | { cwdProblem: string }): number {
  return context.isolation.mode === "bwrap" && !("cwdProblem" in planned) ? SETUP_RETRIES : 0;
}

/**
 * Waits until the wrapper opened the command's stdin (it then holds the FIFO's read end for good), or
 * `ended()`. Closing the last writer before that would leave the wrapper's open blocked for ever.
 */
async function stdinOpened(files: ProcessFiles, ended: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (
      await access(files.opened).then(
        () => true,
        () => false,
      )
    )
      return;
    if (await ended()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Signals a recorded process and its whole tree; a process that already ended is left alone. */
export async function killRecordedProcess(
  context: CommandContext,
  files: ProcessFiles,
  meta: ProcessMeta,
  find: ProcessFinder,
  signal: string,
): Promise<void> {
  const alive = await isProcessAlive(meta.pid, meta.startTime);
  if (!alive && (await recordedExitCode(files)) !== undefined) return;
  await recordKill(files, signal);
  const options = {
    groups: alive ? [meta.pid] : [],
    // The wrapper must live to record the exit; bubblewrap's monitor would die and orphan the command.
    spare: {
      pids: [meta.pid],
      exes: context.isolation.mode === "bwrap" ? launchExesOf(context) : undefined,
      forksOf: meta.pid,
    },
  };
  const deadline = Date.now() + CATCHABLE_RETRY_MS;
  // Right after a spawn only the wrapper and the launchers may exist yet, and they are spared: try again
  // until the command itself is there to receive the signal (or the process is gone).
  while ((await signalTree(find, signal, options)) === 0 && signal !== "SIGKILL" && Date.now() < deadline) {
    if (!(await isProcessAlive(meta.pid, meta.startTime))) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The launchers catchable signals spare under bubblewrap. */
function launchExesOf(context: CommandContext): string[] {
  return context.isolation.mode === "bwrap"
    ? [context.isolation.bwrapPath, context.isolation.programs.nsenter]
    : [];
}

/** A command that only reports a failed `cd`, so a bad cwd fails the same way as under bubblewrap. */
function failingPlan(
  plan: LaunchPlan | { cwdProblem: string },
  fallbackCwd: string,
  env: Record<string, string>,
  find: ProcessFinder,
): LaunchPlan {
  if (!("cwdProblem" in plan)) return plan;
  return {
    file: "/bin/sh",
    args: ["-c", 'printf "%s" "$1" >&2; exit 1', "sh", plan.cwdProblem],
    cwd: fallbackCwd,
    env,
    launchFiles: [],
    find,
    spareExes: [],
  };
}

/** Finds the processes of background process `token` of `target` (also one another program started). */
export async function backgroundFinder(
  context: CommandContext,
  target: CommandTarget,
  token: string,
): Promise<ProcessFinder> {
  const holder = context.isolation.mode === "bwrap" ? await liveHolder(target) : undefined;
  return finderForCommand(token, recordedCgroup(target), holder, context.isolation.mode === "bwrap");
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
  return startBackground(context, target, request, token, files);
}

async function startBackground(
  context: BackgroundContext,
  target: CommandTarget,
  request: DriverExecRequest & DriverOutputCallbacks,
  token: string,
  files: ProcessFiles,
): Promise<DriverProcess> {
  await mkdir(files.dir, { mode: 0o700 });
  const bwrap = context.isolation.mode === "bwrap";
  const planned = await planCommand(context, target, {
    command: request.command,
    cwd: request.cwd,
    env: request.env,
    user: request.user,
    tag: token,
    session: "new",
    readyFd: bwrap,
    swapStderr: bwrap,
    launchDir: files.dir,
  });
  const fallbackEnv = { PATH: SYSTEM_PATH, [SANDBOX_TAG_VARIABLE]: target.id, [COMMAND_TAG_VARIABLE]: token };
  const plan = failingPlan(planned, target.paths.workspace, fallbackEnv, async () => []);
  let stdin: Socket | undefined;
  if (request.stdin instanceof Uint8Array) {
    // Fixed input: a plain file, read to its end; there is nothing to keep open.
    await writeFile(files.stdin, request.stdin, { mode: 0o600 });
  } else {
    await makeFifo(files.stdin);
    // Read-write, so the FIFO has a writer before the command opens it (its open never blocks) and the
    // command sees end of input only when this writer (and any other) is closed.
    stdin = await openFifoWriter(files.stdin, constants.O_RDWR);
  }
  const stdout = await open(files.stdout, "a", 0o600);
  const stderr = await open(files.stderr, "a", 0o600);
  let child: ChildProcess;
  try {
    child = spawn(
      "/bin/sh",
      [
        "-c",
        WRAPPER,
        "sbox-process",
        files.dir,
        String(retriesUsed(context, planned)),
        plan.file,
        ...plan.args,
      ],
      {
        cwd: plan.cwd,
        env: plan.env,
        stdio: ["ignore", stdout.fd, stderr.fd],
        detached: true,
      },
    );
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
  } catch (error) {
    stdin?.destroy();
    cleanUpLaunch(plan, true);
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
  return new BackgroundProcess(context, files, meta, plan.find, plan.group, request, child, stdin);
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
  const find = await backgroundFinder(context, target, record.meta.token);
  return new BackgroundProcess(context, record.files, record.meta, find, undefined, output);
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
  const find = await backgroundFinder(context, target, record.meta.token);
  await killRecordedProcess(context, record.files, record.meta, find, signal);
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
