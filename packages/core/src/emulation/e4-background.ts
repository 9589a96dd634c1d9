import { SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import { normalizeSignal } from "../sandbox/signal-names.js";
import type {
  DriverExit,
  DriverOutputCallbacks,
  DriverProcess,
  DriverSandbox,
  ProcessInfo,
  ProviderDriver,
} from "../spec/provider-spec.js";
import { decodeBase64 } from "./e5-base64.js";
import { abortReasonOf } from "./e7-timeout.js";
import { type EmulationContext, stateDirOf } from "./emulation-context.js";
import { type ExitTokens, newExitTokens } from "./exit-proof.js";
import {
  type DetachedRun,
  detachedScript,
  housekeepingSignal,
  killGroupScript,
  newRunId,
  RUN_FILES,
  startDetached,
} from "./output-detached.js";
import { type FollowRequest, followRun } from "./output-poller.js";
import { appendCommand, chunkBytesFor, pieces, type UploadSource } from "./shell-exec-upload.js";
import { shellCommandOf, shellQuote } from "./shell-quote.js";

/** The driver methods E4 provides. */
export type EmulatedBackground = Required<
  Pick<ProviderDriver, "doSpawn" | "doListProcesses" | "doConnectProcess" | "doKillProcess">
> & {
  /**
   * Notes in the process's record that `signal` is about to be sent by other means (a provider's native
   * kill), so that `wait()` can name the signal, as it does for E4's own kill. Unknown pids are ignored.
   */
  recordSignal(sandbox: DriverSandbox, pid: number, signal: string, callSignal: AbortSignal): Promise<void>;
};

const STDIN_CLOSED = "sbox-stdin-closed";
/**
 * Bytes per stdin write exec. A write blocks while the process does not read (a pipe's back-pressure), so
 * each piece gets a generous deadline of its own instead of one for the whole write.
 */
const STDIN_WRITE_BYTES = 1024 * 1024;
const stdinWriteSignal = (): AbortSignal => AbortSignal.timeout(300_000);
const NOT_FOUND = "sbox-no-such-process";

/**
 * E4: background processes over the exec primitive. A spawned command runs detached in its own session
 * (its pid is its process group), supervised by a shell that records its exit status; everything lives in
 * `<stateDir>/proc/run-<id>/` with `<stateDir>/proc/<pid>` linking to it, so any client (another process,
 * another machine) can list, follow, kill or write to it — the emulation keeps no state of its own.
 *
 * - `doSpawn`: starts (the first output arrives with the start), then follows output into the callbacks
 *   until the process ends, through the sandbox's one poller: idle processes cost nothing per process.
 *   Aborting `request.signal` kills the process group and makes `wait()` reject with the signal's reason.
 *   The exit code `wait()` reports is proven with tokens only the spawner knows (see `exit-proof.ts`).
 * - `doConnectProcess(pid)`: replays output from the first byte, then follows; aborting its signal only
 *   stops following. Unknown pid: `NotFound`. A re-attached client has no tokens: the exit code it reports,
 *   like `doListProcesses`', is the run's `exit` file, which other processes of the sandbox can rewrite.
 * - `doListProcesses`: every recorded process; `running` = not ended and `kill -0` succeeds.
 * - `doKillProcess(pid, signal)`: signals the whole group (`kill -SIG -<pid>`); unknown pid: `NotFound`.
 * - stdin is a FIFO: `writeStdin` writes through the exec's stdin when available, else base64 pieces
 *   under 64 KiB per command line; `closeStdin` delivers end-of-file. Writing after close: `InvalidState`.
 *   Stdin given at spawn (bytes or a stream) is written in the background, then closed; when the stream
 *   fails, `wait()` rejects with that error (a process that exits before reading everything is no failure).
 * - The signal name in `wait()`'s result is reported when the exit status is 128+n for a signal n that was
 *   sent through this emulation (a shell cannot tell death by signal n from `exit 128+n` otherwise).
 * - Records are kept after the process ends (for list and replay) until the sandbox goes away.
 */
export function emulatedBackground(ctx: EmulationContext): EmulatedBackground {
  const rootOf = (sandbox: DriverSandbox): string => `${stateDirOf(ctx, sandbox)}/proc`;
  const dirOf = (sandbox: DriverSandbox, pid: number): string => `${rootOf(sandbox)}/${pid}`;

  const checkPid = (pid: number): void => {
    if (!Number.isSafeInteger(pid) || pid <= 0) {
      throw new SandboxError("Validation", `a process id must be a positive integer, got ${String(pid)}`, {
        retryable: false,
      });
    }
  };

  const exec = async (
    sandbox: DriverSandbox,
    script: string,
    signal: AbortSignal,
    what: string,
    stdin?: Uint8Array,
  ) => {
    const result = await ctx.exec(sandbox, script, { signal, ...(stdin === undefined ? {} : { stdin }) });
    const stdout = new TextDecoder().decode(result.stdout);
    if (stdout.includes(NOT_FOUND)) {
      throw new SandboxError("NotFound", `no background process ${what}`, {
        provider: ctx.provider,
        retryable: false,
      });
    }
    return { ...result, text: stdout };
  };
  const failed = (what: string, result: { exitCode: number; stderr: Uint8Array }): SandboxError =>
    new SandboxError(
      "Provider",
      `${what} failed (exit ${result.exitCode}): ${new TextDecoder().decode(result.stderr).trim()}`,
      {
        provider: ctx.provider,
      },
    );

  const kill = async (
    sandbox: DriverSandbox,
    pid: number,
    signal: string | undefined,
    callSignal: AbortSignal,
  ) => {
    checkPid(pid);
    const name = signal === undefined ? undefined : normalizeSignal(signal, "SIGTERM");
    const dir = dirOf(sandbox, pid);
    const script = `[ -d ${shellQuote(dir)} ] || { echo ${NOT_FOUND}; exit 0; }\n${killGroupScript(pid, name, dir)}`;
    const result = await exec(sandbox, script, callSignal, String(pid));
    if (result.exitCode !== 0) throw failed(`killing process ${pid}`, result);
  };

  const writeStdin = async (sandbox: DriverSandbox, pid: number, data: UploadSource) => {
    const fifo = shellQuote(`${dirOf(sandbox, pid)}/${RUN_FILES.fifo}`);
    for await (const piece of pieces(data, Math.min(STDIN_WRITE_BYTES, chunkBytesFor(ctx)))) {
      const { script, stdin } = appendCommand(ctx, fifo, piece);
      const guarded = `[ -p ${fifo} ] || { echo ${STDIN_CLOSED}; exit 0; }\n${script}`;
      const result = await exec(sandbox, guarded, stdinWriteSignal(), String(pid), stdin);
      if (result.text.includes(STDIN_CLOSED)) {
        throw new SandboxError("InvalidState", `the stdin of process ${pid} is closed`, {
          provider: ctx.provider,
          retryable: false,
        });
      }
      if (result.exitCode !== 0) {
        throw new SandboxError(
          "InvalidState",
          `writing to the stdin of process ${pid} failed (has it exited?)`,
          {
            provider: ctx.provider,
            retryable: false,
          },
        );
      }
    }
  };

  const closeStdin = async (sandbox: DriverSandbox, pid: number, signal: AbortSignal) => {
    const dir = shellQuote(dirOf(sandbox, pid));
    // The FIFO goes first: a writer that still finds it finds the holder alive, so its open cannot block.
    const script = `rm -f ${dir}/${RUN_FILES.fifo}\nh=$(cat ${dir}/${RUN_FILES.holder} 2>/dev/null) && kill "$h" 2>/dev/null\ntrue`;
    const result = await exec(sandbox, script, signal, String(pid));
    if (result.exitCode !== 0) throw failed(`closing the stdin of process ${pid}`, result);
  };

  /**
   * A handle that follows `pid` into the callbacks. The spawner holds the run's exit tokens and the first
   * poll of its start, and kills the process when its signal aborts; a re-attacher has neither.
   */
  const handle = (
    sandbox: DriverSandbox,
    pid: number,
    callbacks: DriverOutputCallbacks & { signal: AbortSignal },
    spawner: { tokens: ExitTokens; initial: FollowRequest["initial"]; dir: string } | undefined,
  ): DriverProcess & { feedStdin(source: UploadSource): void } => {
    const killOnAbort = spawner !== undefined;
    const what = `background process ${pid}`;
    let stdinFailure: SandboxError | undefined;
    let stdinChain: Promise<void> = Promise.resolve();
    const serial = (task: () => Promise<void>): Promise<void> => {
      const next = stdinChain.then(task);
      stdinChain = next.catch(() => undefined);
      return next.catch((error: unknown) => {
        throw toSandboxError(error, { provider: ctx.provider, operation: `stdin of process ${pid}` });
      });
    };
    const exited = followRun(ctx, sandbox, {
      // The spawner follows the run directory itself: the pid link may be replaced by a later process
      // that reuses the pid.
      dir: spawner ? spawner.dir : dirOf(sandbox, pid),
      signal: callbacks.signal,
      removeWhenDone: false,
      what,
      tokens: spawner?.tokens,
      foreground: false,
      initial: spawner?.initial,
      onStdout: (chunk) => callbacks.onStdout(chunk),
      onStderr: (chunk) => callbacks.onStderr(chunk),
      ready: callbacks.ready,
    }).catch(async (error: unknown): Promise<DriverExit> => {
      if (!callbacks.signal.aborted) throw toSandboxError(error, { provider: ctx.provider, operation: what });
      if (killOnAbort) await kill(sandbox, pid, undefined, housekeepingSignal()).catch(() => undefined);
      throw abortReasonOf(callbacks.signal.reason, what);
    });
    // A caller that never waits must not crash the process with an unhandled rejection.
    exited.catch(() => undefined);
    return {
      pid,
      wait: async () => {
        const exit = await exited;
        if (stdinFailure) throw stdinFailure;
        return exit;
      },
      kill: (signal) => kill(sandbox, pid, signal, housekeepingSignal()),
      writeStdin: (data) => serial(() => writeStdin(sandbox, pid, data)),
      closeStdin: () => serial(() => closeStdin(sandbox, pid, housekeepingSignal())),
      feedStdin(source) {
        const pump = serial(async () => {
          try {
            await writeStdin(sandbox, pid, source);
          } finally {
            await closeStdin(sandbox, pid, housekeepingSignal()).catch(() => undefined);
          }
        });
        pump.catch((error: unknown) => {
          // A process that exits or closes its stdin before reading everything has not failed.
          if (SandboxError.isInstance(error) && error.code === "InvalidState") return;
          stdinFailure = toSandboxError(error, {
            provider: ctx.provider,
            operation: `stdin of process ${pid}`,
          });
        });
      },
    };
  };

  return {
    async doSpawn(sandbox, request) {
      if (request.signal.aborted) throw abortReasonOf(request.signal.reason, "spawn");
      const script = detachedScript(ctx, request, "background exec");
      const dir = `${rootOf(sandbox)}/run-${newRunId()}`;
      const tokens = newExitTokens();
      let run: DetachedRun;
      try {
        run = await startDetached(ctx, sandbox, {
          dir,
          stateDir: stateDirOf(ctx, sandbox),
          script,
          display: shellCommandOf(request.command),
          stdin: "fifo",
          linkDir: rootOf(sandbox),
          tokens,
          removeWhenDone: false,
        });
      } catch (error) {
        throw toSandboxError(error, { provider: ctx.provider, operation: "spawn" });
      }
      const process = handle(sandbox, run.pid, request, { tokens, initial: run.initial, dir });
      if (request.stdin !== undefined) process.feedStdin(request.stdin);
      const { feedStdin: _, ...driverProcess } = process;
      return driverProcess;
    },

    async doConnectProcess(sandbox, pid, request) {
      checkPid(pid);
      const dir = shellQuote(dirOf(sandbox, pid));
      const result = await exec(sandbox, `[ -d ${dir} ] || echo ${NOT_FOUND}`, request.signal, String(pid));
      if (result.exitCode !== 0) throw failed(`connecting to process ${pid}`, result);
      const { feedStdin: _, ...driverProcess } = handle(sandbox, pid, request, undefined);
      return driverProcess;
    },

    async doListProcesses(sandbox, options) {
      const r = shellQuote(rootOf(sandbox));
      const script = [
        `[ -d ${r} ] || exit 0`,
        `for l in ${r}/*; do`,
        `  p=\${l##*/}; case $p in ""|*[!0-9]*) continue;; esac`,
        '  [ -d "$l" ] || continue',
        `  e=$(cat "$l/${RUN_FILES.exit}" 2>/dev/null); a=0`,
        '  if [ -z "$e" ] && kill -0 "$p" 2>/dev/null; then a=1; fi',
        `  c=$(base64 < "$l/${RUN_FILES.cmd}" | tr -d '\\n')`,
        `  echo "$p $a \${e:--} $c"`,
        "done",
      ].join("\n");
      const result = await exec(sandbox, script, options.signal, "list");
      if (result.exitCode !== 0) throw failed("listing background processes", result);
      const processes: ProcessInfo[] = [];
      for (const line of result.text.split("\n")) {
        const [pid, running, exit, command] = line.trim().split(" ");
        if (!pid || !running || !exit) continue;
        const info: ProcessInfo = {
          pid: Number(pid),
          command: new TextDecoder().decode(decodeBase64(command ?? "")),
          running: running === "1",
        };
        if (/^[0-9]+$/.test(exit)) info.exitCode = Number(exit);
        processes.push(info);
      }
      return processes.sort((a, b) => a.pid - b.pid);
    },

    async doKillProcess(sandbox, pid, signal, options) {
      await kill(sandbox, pid, signal, options.signal);
    },

    async recordSignal(sandbox, pid, signal, callSignal) {
      checkPid(pid);
      const name = normalizeSignal(signal, "SIGTERM");
      const dir = dirOf(sandbox, pid);
      const exit = shellQuote(`${dir}/${RUN_FILES.exit}`);
      const killed = shellQuote(`${dir}/${RUN_FILES.killed}`);
      await ctx.exec(
        sandbox,
        `[ -d ${shellQuote(dir)} ] && ! [ -f ${exit} ] && echo ${name} > ${killed}; true`,
        {
          signal: callSignal,
        },
      );
    },
  };
}
