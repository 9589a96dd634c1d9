import { SandboxError } from "../errors/sandbox-error.js";
import type { DriverExecRequest, DriverSandbox } from "../spec/provider-spec.js";
import { applyEnvCwd } from "./e1-env-cwd.js";
import { type EmulationContext, fitsCommandLine, noteStdoutKind, stdoutIsRaw } from "./emulation-context.js";
import { type ExitTokens, tokenLine, WRITE_PROOF_SCRIPT } from "./exit-proof.js";
import {
  pollCall,
  pollCapFor,
  pollFunctions,
  pollGoneCall,
  type RunPoll,
  takeLines,
  takeRunPoll,
} from "./output-poll-script.js";
import { randomHex } from "./random-hex.js";
import { uploadToFile } from "./shell-exec-upload.js";
import { shellQuote } from "./shell-quote.js";

/**
 * Layout of one detached run directory (E3, E4). Every fact about a run lives in these files inside the
 * sandbox, so any client (another process, after a restart) can follow, list or kill it.
 *
 * - `script` the shell script to run; `cmd` the command text shown by `commands.list()`
 * - `stdin` stdin bytes (mode `file`), or `in` a FIFO held open by the process in `holder` (mode `fifo`)
 * - `out`, `err` everything the command wrote; `pid` the command's pid (= its process group and session)
 * - `runner` the pid of the supervising shell and its start time; `exit` the exit status, written when the
 *   command ended
 * - `x.<code>.<proof>` the exit status proven with the starting client's tokens (see `exit-proof.ts`);
 *   `exit` is for everyone else (`list`, `connect` from another client) and any process can rewrite it
 * - `killed` the last signal sent through the emulation
 */
export const RUN_FILES = {
  script: "script",
  cmd: "cmd",
  stdin: "stdin",
  fifo: "in",
  holder: "holder",
  out: "out",
  err: "err",
  pid: "pid",
  runner: "runner",
  exit: "exit",
  killed: "killed",
} as const;

/** Where a detached command reads stdin from. */
export type DetachedStdin = "none" | "file" | "fifo";

/**
 * The supervisor, run as `setsid sh -c RUNNER sbox-runner <dir> <stdin mode> <link dir>` with the exit
 * tokens as the one line of its stdin and fd 6 open to the starting exec. It opens the output files itself
 * before starting the command, so the command's stdio never depends on paths, starts the command with
 * `setsid` (its pid is its process group, which `kill -SIG -<pid>` signals as a whole), reports the pid on
 * fd 6 and closes it, and survives the command to record its exit status: the `exit` file, then the proof
 * as its last act. Being a session leader with no terminal, it does not get SIGHUP when the exec that started it ends.
 * In `fifo` mode a holder keeps the FIFO open (read-write, so opening it never blocks) until stdin is closed
 * or the command ends; the FIFO is removed before the holder is killed, so a writer can never wait forever
 * for a reader. The tokens stay in this shell's memory: no process's arguments, environment or file.
 */
const RUNNER = [
  "d=$1; m=$2; l=$3; k=; IFS= read -r k; exec 0</dev/null",
  // Its pid and start time (field 22 of /proc/<pid>/stat, where there is a /proc): see `sbox_alive`.
  `st=; { read -r st < /proc/$$/stat; } 2>/dev/null; st=\${st##*) }; set -- $st; echo "$$ \${20}" > "$d/runner"`,
  'exec 3>"$d/out" 4>"$d/err"',
  "case $m in",
  'fifo) mkfifo "$d/in" || exit 1',
  '  sleep 2147483647 1<>"$d/in" </dev/null 2>/dev/null 3>&- 4>&- 6>&- &',
  '  echo $! > "$d/holder"; exec 5<"$d/in";;',
  'file) exec 5<"$d/stdin";;',
  "*) exec 5</dev/null;;",
  "esac",
  'setsid sh "$d/script" <&5 >&3 2>&4 3>&- 4>&- 5<&- 6>&- &',
  'q=$!; exec 3>&- 4>&- 5<&-; echo $q > "$d/pid"',
  'if [ -n "$l" ]; then',
  '  if [ -L "$l/$q" ]; then o=$(readlink "$l/$q"); rm -rf "$l/$o" "$l/$q"; fi',
  `  ln -s "\${d##*/}" "$l/$q"`,
  "fi",
  "echo $q >&6; exec 6>&-",
  "wait $q; c=$?",
  'echo $c > "$d/exit.tmp" && mv "$d/exit.tmp" "$d/exit"',
  'if [ -f "$d/holder" ]; then rm -f "$d/in"; kill "$(cat "$d/holder")" 2>/dev/null; fi',
  // The proof last: once it exists, the supervisor is about to exit.
  WRITE_PROOF_SCRIPT,
].join("\n");

/** A started detached command. */
export interface DetachedRun {
  /** Its run directory. */
  readonly dir: string;
  /** Its pid, which is also its process group id. */
  readonly pid: number;
  /** What the first poll, run by the start exec right after the command started, saw. */
  readonly initial: RunPoll;
}

/** What to start. */
export interface DetachedRequest {
  /** Absolute run directory inside the state directory; created. */
  readonly dir: string;
  /** The state directory the run directory is in. */
  readonly stateDir: string;
  /** The full script (cwd/env already applied). */
  readonly script: string;
  /** Shown by `commands.list()`; written only when given. */
  readonly display?: string | undefined;
  readonly stdin: DetachedStdin;
  /** When set, `<linkDir>/<pid>` becomes a symlink to the run directory (E4's pid index). */
  readonly linkDir?: string | undefined;
  /** The run's exit tokens, handed to the supervisor (on the exec's stdin where it takes any). */
  readonly tokens: ExitTokens;
  /** Remove the run directory when the first poll already delivers the end (E3). */
  readonly removeWhenDone: boolean;
}

/**
 * The script a detached run executes: the request's command with its cwd/env applied (E1). Running as
 * another user is refused, since the emulation has no way to switch users.
 */
export function detachedScript(ctx: EmulationContext, request: DriverExecRequest, what: string): string {
  if (request.user !== undefined) {
    throw new SandboxError("Validation", `the emulated ${what} cannot run a command as another user`, {
      provider: ctx.provider,
      retryable: false,
    });
  }
  return applyEnvCwd(request.command, { cwd: request.cwd, env: request.env });
}

/** A random id for a run directory name. */
export function newRunId(): string {
  return randomHex(12);
}

/**
 * An abort signal for housekeeping execs (start, kill, cleanup) that must run to completion even when the
 * user's signal has fired, or a detached command would be left behind; bounded so they cannot hang.
 */
export function housekeepingSignal(): AbortSignal {
  return AbortSignal.timeout(60_000);
}

/** How long the start exec waits for the command's first output or end (in 3 ms steps). */
const FIRST_OUTPUT_WAITS = 10;

/**
 * Starts `request.script` detached and returns once it runs, with the first poll of its output: the start
 * exec waits up to 30 ms for the first output or the end, so a short command costs a single exec and the
 * first chunk of a longer one arrives one round trip after the start. The start exec is never aborted
 * midway (that could leave a command running whose pid nobody knows); callers check their own signal
 * afterwards and kill. Scripts too long for one command line are uploaded in pieces first.
 */
export async function startDetached(
  ctx: EmulationContext,
  sandbox: DriverSandbox,
  request: DetachedRequest,
): Promise<DetachedRun> {
  const dir = shellQuote(request.dir);
  const relative = relativeRunDir(request);
  const files: [string, string][] = [[RUN_FILES.script, request.script]];
  if (request.display !== undefined) files.push([RUN_FILES.cmd, request.display]);
  const writes = files.map(([name, text]) => `printf %s ${shellQuote(text)} > ${dir}/${name}`).join("\n");
  // The tokens reach the supervisor through a pipe from this shell: read from the exec's stdin, they
  // appear in no process's arguments; inline (an exec without stdin) they are on this exec's command line.
  const viaStdin = ctx.execStdin !== "none";
  const tokens = viaStdin ? "k=; IFS= read -r k" : `k=${shellQuote(tokenLine(request.tokens))}`;
  // The first poll's output comes back raw when an earlier exec showed that stdout carries bytes.
  const raw = stdoutIsRaw(ctx);
  const cap = pollCapFor(1);
  const member = {
    dir: relative,
    offsets: { out: 0, err: 0 },
    seen: { out: 0, err: 0 },
    removeWhenDone: request.removeWhenDone,
    proven: true,
    proofsSeen: 0,
  };
  const launch = [
    tokens,
    `p=$(printf '%s\\n' "$k" | setsid sh -c ${shellQuote(RUNNER)} sbox-runner ${dir} ${request.stdin} ${shellQuote(request.linkDir ?? "")} 6>&1 >/dev/null 2>${dir}/runner.err &)`,
    'k=; case $p in ""|*[!0-9]*)',
    `  cat ${dir}/runner.err >&2; echo 'sbox: the detached command did not start' >&2; exit 125;;`,
    "esac",
    `i=0; while [ $i -lt ${FIRST_OUTPUT_WAITS} ]; do`,
    `  { [ -s ${dir}/out ] || [ -s ${dir}/err ] || sbox_ended ${dir} 1 0; } && break`,
    "  sleep 0.003 2>/dev/null || break; i=$((i + 1))",
    "done",
    'echo "P $p"',
    `if cd ${shellQuote(request.stateDir)} 2>/dev/null; then ${pollCall(member, cap, raw)}; else ${pollGoneCall(raw)}; fi`,
  ];
  let script = `${pollFunctions()}\nmkdir -p ${dir} || exit 125\n${writes}\n${launch.join("\n")}`;
  if (!fitsCommandLine(script)) {
    for (const [name, text] of files) {
      await uploadToFile(ctx, sandbox, `${request.dir}/${name}`, new TextEncoder().encode(text), {
        signal: housekeepingSignal(),
        what: `the ${name} of a detached command`,
      });
    }
    script = `${pollFunctions()}\nmkdir -p ${dir} || exit 125\n${launch.join("\n")}`;
  }
  const result = await ctx.exec(sandbox, script, {
    signal: housekeepingSignal(),
    ...(viaStdin ? { stdin: new TextEncoder().encode(`${tokenLine(request.tokens)}\n`) } : {}),
  });
  noteStdoutKind(ctx, result);
  const { lines, rest } = takeLines(result.stdout, 1);
  const pidLine = new TextDecoder().decode(lines[0] ?? new Uint8Array(0));
  const pid = /^P ([0-9]+)$/.exec(pidLine)?.[1];
  if (result.exitCode !== 0 || pid === undefined) {
    throw new SandboxError(
      "Provider",
      `could not start the command detached (exit ${result.exitCode}): ${new TextDecoder().decode(result.stderr).trim()}`,
      { provider: ctx.provider },
    );
  }
  const { poll: initial } = takeRunPoll(
    rest,
    { raw, cap },
    { provider: ctx.provider, what: "the detached command" },
  );
  return { dir: request.dir, pid: Number(pid), initial };
}

/** The run directory relative to the state directory it must be in. */
export function relativeRunDir(request: { readonly dir: string; readonly stateDir: string }): string {
  const prefix = `${request.stateDir}/`;
  if (!request.dir.startsWith(prefix)) {
    throw new SandboxError("InvalidState", `a run directory must be inside the state directory`, {
      retryable: false,
    });
  }
  return request.dir.slice(prefix.length);
}

/**
 * Shell text that signals the whole process group `pid`. With no `signal`: SIGTERM, then SIGKILL when the
 * group is still there after a short grace. With `recordIn`, the signal is written to that run directory's
 * `killed` file (unless the command already ended) so every client can report how it ended.
 */
export function killGroupScript(pid: number, signal: string | undefined, recordIn?: string): string {
  const record = (name: string): string =>
    recordIn === undefined
      ? ""
      : `[ -f ${shellQuote(`${recordIn}/${RUN_FILES.exit}`)} ] || echo ${name} > ${shellQuote(`${recordIn}/${RUN_FILES.killed}`)} 2>/dev/null; `;
  if (signal !== undefined) {
    const short = signal.replace(/^SIG/, "");
    return `${record(signal)}kill -${short} -${pid} 2>/dev/null; true`;
  }
  return [
    `${record("SIGTERM")}kill -TERM -${pid} 2>/dev/null`,
    "i=0",
    `while kill -0 -${pid} 2>/dev/null; do`,
    `  if [ $i -ge 10 ]; then ${record("SIGKILL")}kill -KILL -${pid} 2>/dev/null; break; fi`,
    "  i=$((i+1)); sleep 0.05 2>/dev/null || sleep 1",
    "done",
    "true",
  ].join("\n");
}

/** Kills a run's process group (TERM, then KILL) and removes its directory; used on abort and failure. */
export async function killAndRemove(
  ctx: EmulationContext,
  sandbox: DriverSandbox,
  dir: string,
  pid: number | undefined,
): Promise<void> {
  const kill = pid === undefined ? "" : `${killGroupScript(pid, undefined)}\n`;
  await ctx.exec(sandbox, `${kill}rm -rf ${shellQuote(dir)}`, { signal: housekeepingSignal() });
}
