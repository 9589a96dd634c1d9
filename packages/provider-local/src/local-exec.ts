import { type ChildProcessByStdio, spawn } from "node:child_process";
import { rmdir, unlink } from "node:fs/promises";
import type { Duplex, Readable, Writable } from "node:stream";
import type { DriverExecRequest, DriverExit, DriverOutputCallbacks } from "@sbox/core/spec";
import { recycleCommandGroup } from "./local-cgroups.js";
import { type CommandSettings, type CommandTarget, type LaunchPlan, planLaunch } from "./local-command.js";
import { abortErrorOf, localError, throwIfAborted, toLocalError } from "./local-errors.js";
import { ensureRunning } from "./local-holder.js";
import type { HolderCache } from "./local-holder-cache.js";
import { newLocalId } from "./local-ids.js";
import type { ResolvedIsolation } from "./local-isolation.js";
import { sandboxCgroupFor, sandboxResources } from "./local-launch.js";
import { signalNumber, signalTree } from "./local-procfs.js";
import { feedStdin } from "./local-stdin.js";

/** Everything a command start needs from its provider instance. */
export interface CommandContext {
  readonly settings: CommandSettings;
  readonly isolation: ResolvedIsolation;
  readonly holders: HolderCache;
}

/** Plans a command of `target`: its sandbox's namespaces (started when needed) and cgroup first. */
export async function planCommand(
  context: CommandContext,
  target: CommandTarget,
  input: Omit<Parameters<typeof planLaunch>[3], "launchDir"> & { launchDir?: string | undefined },
): Promise<LaunchPlan | { cwdProblem: string }> {
  const { settings, isolation } = context;
  const running =
    isolation.mode === "bwrap"
      ? await ensureRunning(settings, isolation, target, context.holders)
      : undefined;
  const cgroup = running ? running.cgroup : await sandboxCgroupFor(target, sandboxResources(target.record));
  return planLaunch(
    settings,
    isolation,
    target,
    { ...input, launchDir: input.launchDir ?? target.paths.launch },
    running,
    cgroup,
  );
}

/** Removes what a start left: its argument files, and its cgroup once nothing of it runs any more. */
export function cleanUpLaunch(plan: LaunchPlan, ended: boolean): void {
  for (const file of plan.launchFiles) void unlink(file).catch(() => {});
  if (!ended || plan.group === undefined) return;
  if (plan.reusableGroup) void recycleCommandGroup(plan.group);
  else void rmdir(plan.group).catch(() => {});
}

/** How long a command killed with a catchable signal may take before its tree is killed outright. */
const GRACEFUL_KILL_MS = 2_000;
/** How often a command is started again when bubblewrap fails to set its sandbox up. */
const SETUP_RETRIES = 4;
/** After a command exits, how long its output pipes may stay open (held by leftovers) before those are killed. */
const LEFTOVER_GRACE_MS = 25;

/** The signal a caller asked for when it aborted a run with `handle.kill(signal)`, if it said. */
function requestedSignal(reason: unknown): string | undefined {
  const signal =
    typeof reason === "object" && reason !== null ? (reason as { signal?: unknown }).signal : undefined;
  return typeof signal === "string" && signalNumber(signal) !== undefined ? signal : undefined;
}

/** Exit code and signal name the way a shell reports them: a signal death is 128 + its number. */
export function exitOf(code: number | null, signal: NodeJS.Signals | null, delivered?: string): DriverExit {
  if (signal) return { exitCode: 128 + (signalNumber(signal) ?? 0), signal };
  const exitCode = code ?? 1;
  // Under bubblewrap a signal death arrives as 128+n; name it when it is the signal this provider sent.
  if (delivered && exitCode === 128 + (signalNumber(delivered) ?? -999))
    return { exitCode, signal: delivered };
  return { exitCode };
}

/**
 * Runs one foreground command to completion, streaming raw output chunks to the callbacks as they arrive.
 * On abort, the command's whole tree is killed (every process carrying its tag, including ones that left its
 * process group) before the call rejects. Leftover processes of a finished command are killed too, so no
 * command outlives its `run()` (bubblewrap's PID namespace does the same on its own).
 */
export async function runForeground(
  context: CommandContext,
  target: CommandTarget,
  request: DriverExecRequest,
  output: DriverOutputCallbacks,
): Promise<DriverExit> {
  let failure = "";
  for (let attempt = 0; attempt <= SETUP_RETRIES; attempt++) {
    throwIfAborted(request.signal, "exec");
    const outcome = await runOnce(context, target, request, output);
    if (!("setupFailed" in outcome)) return outcome;
    failure = outcome.setupFailed;
    await new Promise((resolve) => setTimeout(resolve, 10 * (attempt + 1)));
  }
  throw localError("Provider", `bubblewrap could not set the sandbox up: ${failure.trim()}`);
}

/** One start of a command; `setupFailed` (bubblewrap's message) when the command never began. */
async function runOnce(
  context: CommandContext,
  target: CommandTarget,
  request: DriverExecRequest,
  output: DriverOutputCallbacks,
): Promise<DriverExit | { setupFailed: string }> {
  const tag = newLocalId();
  const isolation = context.isolation;
  const watchReady = isolation.mode === "bwrap";
  const plan = await planCommand(context, target, {
    command: request.command,
    cwd: request.cwd,
    env: request.env,
    user: request.user,
    tag,
    session: "new",
    readyFd: watchReady,
    foreground: true,
  });
  if ("cwdProblem" in plan) {
    output.onStderr(Buffer.from(plan.cwdProblem));
    return { exitCode: 1 };
  }
  const launch = plan;
  const stdinMode = request.stdin === undefined ? "ignore" : "pipe";
  return new Promise<DriverExit | { setupFailed: string }>((resolve, reject) => {
    let child: ChildProcessByStdio<Writable | null, Readable, Readable>;
    try {
      child = spawn(launch.file, launch.args, {
        cwd: launch.cwd,
        env: launch.env,
        // 0: a pipe only when there is stdin to feed (else /dev/null: the same immediate EOF, one pipe less
        // to make on every command's way); 4: the ready pipe; 6: bubblewrap's arguments (read by it to their
        // end, then closed).
        stdio: launch.argsData
          ? [stdinMode, "pipe", "pipe", "ignore", "pipe", "ignore", "pipe"]
          : watchReady
            ? [stdinMode, "pipe", "pipe", "ignore", "pipe"]
            : [stdinMode, "pipe", "pipe"],
        // Its own process group, so a kill reaches everything it forks.
        detached: true,
      }) as ChildProcessByStdio<Writable | null, Readable, Readable>;
    } catch (error) {
      cleanUpLaunch(launch, true);
      throw error;
    }
    let settled = false;
    let exit: DriverExit | undefined;
    let delivered: string | undefined;
    let killing: Promise<void> | undefined;
    let closeTimer: ReturnType<typeof setTimeout> | undefined;
    // Until the command reports that it started, output can only be bubblewrap's: hold it back.
    let ready = !watchReady;
    const held: { stream: "out" | "err"; chunk: Buffer }[] = [];
    const becomeReady = () => {
      if (ready) return;
      ready = true;
      cleanUpLaunch(launch, false);
      for (const { stream, chunk } of held) (stream === "out" ? output.onStdout : output.onStderr)(chunk);
      held.length = 0;
      if (child.stdin) feedStdin(child.stdin, request.stdin, request.signal).catch(() => {});
      handOverControl();
    };

    const killTree = (signal: string): Promise<void> => {
      delivered = signal;
      return signalTree(launch.find, signal, {
        groups: child.pid ? [child.pid] : [],
        // The launchers (nsenter, bubblewrap's monitor) would die of a catchable signal and leave the command
        // running unobserved.
        spare: isolation.mode === "bwrap" ? { exes: launch.spareExes } : undefined,
      }).then(() => {});
    };
    // `handle.kill(signal)`: exactly that signal to the command's tree (found by its tag, also processes that
    // left its group); the command then ends as it chooses and its exit is reported as usual.
    const handOverControl = () =>
      request.onStarted?.({
        signal: async (name) => {
          if (signalNumber(name) === undefined) throw localError("Validation", `unknown signal ${name}`);
          if (exit === undefined && !settled) await killTree(name);
        },
      });
    const onAbort = () => {
      if (killing) return;
      const graceful = requestedSignal(request.signal.reason);
      killing = (async () => {
        if (graceful && graceful !== "SIGKILL") {
          await killTree(graceful);
          const deadline = Date.now() + GRACEFUL_KILL_MS;
          while (exit === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        }
        await killTree("SIGKILL");
      })().catch(() => {});
    };
    const finish = (error?: unknown) => {
      if (settled) return;
      settled = true;
      request.signal.removeEventListener("abort", onAbort);
      if (closeTimer) clearTimeout(closeTimer);
      cleanUpLaunch(launch, true);
      if (error !== undefined) return reject(toLocalError(error, "exec"));
      if (request.signal.aborted) {
        // Report the abort only once the tree is really gone.
        void (killing ?? Promise.resolve()).then(() => reject(abortErrorOf(request.signal, "exec")));
        return;
      }
      if (!ready) {
        resolve({ setupFailed: Buffer.concat(held.map((h) => h.chunk)).toString("utf8") });
        return;
      }
      resolve(exit ?? { exitCode: 1 });
    };

    const argsPipe = launch.argsData ? ((child.stdio as unknown[])[6] as Duplex | null) : null;
    // A launcher that died before reading them: its exit is reported, not the broken pipe. Drained, so the
    // pipe ends (and `close` comes) with the launchers.
    argsPipe?.on("error", () => {});
    argsPipe?.resume();
    argsPipe?.end(launch.argsData);
    child.on("error", (error) => {
      finish(localError("Provider", `could not start the command (${launch.file}): ${error.message}`, error));
    });
    const readyPipe = watchReady ? (child.stdio[4] as Readable | null) : null;
    const outputStreams = [child.stdout, child.stderr, ...(readyPipe ? [readyPipe] : [])];
    const outputEnded = () => outputStreams.every((stream) => stream.readableEnded || stream.destroyed);
    readyPipe?.on("data", becomeReady);
    readyPipe?.on("error", () => {});
    child.stdout.on("data", (chunk: Buffer) =>
      ready ? output.onStdout(chunk) : held.push({ stream: "out", chunk }),
    );
    child.stderr.on("data", (chunk: Buffer) =>
      ready ? output.onStderr(chunk) : held.push({ stream: "err", chunk }),
    );
    child.on("exit", (code, signal) => {
      exit = exitOf(code, signal, delivered);
      // Output pipes still open a while after the exit are held by leftover children: kill those so the
      // pipes close. A timer runs before the I/O waiting in the same turn of the event loop, so when this
      // program was busy the pipes' end may just not have been read yet: look again once I/O had its turn.
      closeTimer = setTimeout(() => {
        setImmediate(() => {
          if (settled || outputEnded()) return;
          // The group is still referenced by its members, so its id cannot have been reused by then.
          const stopWaiting = () => {
            if (settled) return;
            // Only processes that left both the group and the command's tree can still hold the pipes.
            closeTimer = setTimeout(() => {
              child.stdout.destroy();
              child.stderr.destroy();
            }, 2_000);
          };
          void signalTree(launch.find, "SIGKILL", { groups: child.pid ? [child.pid] : [] }).then(
            stopWaiting,
            stopWaiting,
          );
        });
      }, LEFTOVER_GRACE_MS);
    });
    child.on("close", () => finish());
    request.signal.addEventListener("abort", onAbort, { once: true });
    if (request.signal.aborted) onAbort();
    if (ready) {
      if (child.stdin) feedStdin(child.stdin, request.stdin, request.signal).catch(() => {});
      handOverControl();
    } else child.stdin?.on("error", () => {});
  });
}
