import { SandboxError } from "../errors/sandbox-error.js";
import type { DriverExecRequest, DriverSandbox } from "../spec/provider-spec.js";
import { applyEnvCwd } from "./e1-env-cwd.js";
import { type EmulationContext, MAX_COMMAND_LINE_BYTES, type ShellResult } from "./emulation-context.js";
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
 * - `runner` the pid of the supervising shell; `exit` the exit status, written when the command ended
 * - `killed` the last signal sent through the emulation; `started` written once the command runs
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
  started: "started",
} as const;

/** Where a detached command reads stdin from. */
export type DetachedStdin = "none" | "file" | "fifo";

/**
 * The supervisor, run as `setsid sh -c RUNNER sbox-runner <dir> <stdin mode> <link dir>`. It opens the
 * output files itself before starting the command, so the command's stdio never depends on paths, starts
 * the command with `setsid` (its pid is its process group, which `kill -SIG -<pid>` signals as a whole),
 * and survives that kill to record the exit status. Being a session leader with no terminal, it does not
 * get SIGHUP when the exec that started it ends. In `fifo` mode a holder keeps the FIFO open (read-write,
 * so opening it never blocks) until stdin is closed or the command ends; the FIFO is removed before the
 * holder is killed, so a writer can never wait forever for a reader.
 */
const RUNNER = [
  'd=$1; echo $$ > "$d/runner"',
  'exec 3>"$d/out" 4>"$d/err"',
  "case $2 in",
  'fifo) mkfifo "$d/in" || exit 1',
  '  sleep 2147483647 1<>"$d/in" </dev/null 2>/dev/null 3>&- 4>&- &',
  '  echo $! > "$d/holder"; exec 5<"$d/in";;',
  'file) exec 5<"$d/stdin";;',
  "*) exec 5</dev/null;;",
  "esac",
  'setsid sh "$d/script" <&5 >&3 2>&4 3>&- 4>&- 5<&- &',
  'q=$!; exec 3>&- 4>&- 5<&-; echo $q > "$d/pid"',
  'if [ -n "$3" ]; then',
  '  if [ -L "$3/$q" ]; then o=$(readlink "$3/$q"); rm -rf "$3/$o" "$3/$q"; fi',
  `  ln -s "\${d##*/}" "$3/$q"`,
  "fi",
  'echo $q > "$d/started.tmp" && mv "$d/started.tmp" "$d/started"',
  "wait $q; c=$?",
  'echo $c > "$d/exit.tmp" && mv "$d/exit.tmp" "$d/exit"',
  'if [ -f "$d/holder" ]; then rm -f "$d/in"; kill "$(cat "$d/holder")" 2>/dev/null; fi',
].join("\n");

/** A started detached command. */
export interface DetachedRun {
  /** Its run directory. */
  readonly dir: string;
  /** Its pid, which is also its process group id. */
  readonly pid: number;
  /** What `request.after` printed (stdout after the pid line), with the exec's exit code and stderr. */
  readonly afterResult?: ShellResult | undefined;
}

/** What to start. */
export interface DetachedRequest {
  /** Absolute run directory; created. */
  readonly dir: string;
  /** The full script (cwd/env already applied). */
  readonly script: string;
  /** Shown by `commands.list()`; written only when given. */
  readonly display?: string | undefined;
  readonly stdin: DetachedStdin;
  /** When set, `<linkDir>/<pid>` becomes a symlink to the run directory (E4's pid index). */
  readonly linkDir?: string | undefined;
  /**
   * A script to run in the same exec once the command runs, after giving it a few milliseconds to end:
   * E3 puts its first poll here, so a short command costs a single exec.
   */
  readonly after?: string | undefined;
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

/**
 * Starts `request.script` detached and returns once it runs. The start exec is never aborted midway (that
 * could leave a command running whose pid nobody knows); callers check their own signal afterwards and kill.
 * Scripts too long for one command line are uploaded in pieces first.
 */
export async function startDetached(
  ctx: EmulationContext,
  sandbox: DriverSandbox,
  request: DetachedRequest,
): Promise<DetachedRun> {
  const dir = shellQuote(request.dir);
  const files: [string, string][] = [[RUN_FILES.script, request.script]];
  if (request.display !== undefined) files.push([RUN_FILES.cmd, request.display]);
  const writes = files.map(([name, text]) => `printf %s ${shellQuote(text)} > ${dir}/${name}`).join("\n");
  const launch = [
    `setsid sh -c ${shellQuote(RUNNER)} sbox-runner ${dir} ${request.stdin} ${shellQuote(request.linkDir ?? "")} </dev/null >/dev/null 2>${dir}/runner.err &`,
    "i=0",
    `while [ ! -f ${dir}/started ]; do`,
    // Anything the runner prints before it has started the command is a failure to start it.
    `  if [ -s ${dir}/runner.err ] && [ ! -f ${dir}/started ]; then cat ${dir}/runner.err >&2; exit 125; fi`,
    "  i=$((i+1)); if [ $i -gt 400 ]; then echo 'sbox: the detached command did not start' >&2; exit 125; fi",
    "  if [ $i -lt 100 ]; then sleep 0.002 2>/dev/null || sleep 1; else sleep 0.05 2>/dev/null || sleep 1; fi",
    "done",
    `cat ${dir}/started`,
  ];
  if (request.after !== undefined) {
    launch.push(
      "i=0",
      `while [ ! -f ${dir}/${RUN_FILES.exit} ] && [ $i -lt 10 ]; do sleep 0.005 2>/dev/null || break; i=$((i+1)); done`,
      request.after,
    );
  }
  let script = `mkdir -p ${dir} || exit 125\n${writes}\n${launch.join("\n")}`;
  // Quoted once more by E2's wrapper: the bound must hold for the text as the provider receives it.
  if (Buffer.byteLength(shellQuote(script)) + 256 > MAX_COMMAND_LINE_BYTES) {
    for (const [name, text] of files) {
      await uploadToFile(ctx, sandbox, `${request.dir}/${name}`, new TextEncoder().encode(text), {
        signal: housekeepingSignal(),
        what: `the ${name} of a detached command`,
      });
    }
    script = `mkdir -p ${dir} || exit 125\n${launch.join("\n")}`;
  }
  const result = await ctx.exec(sandbox, script, { signal: housekeepingSignal() });
  const newline = result.stdout.indexOf(0x0a);
  const text = new TextDecoder()
    .decode(newline === -1 ? result.stdout : result.stdout.subarray(0, newline))
    .trim();
  if ((request.after === undefined && result.exitCode !== 0) || !/^[0-9]+$/.test(text)) {
    throw new SandboxError(
      "Provider",
      `could not start the command detached (exit ${result.exitCode}): ${new TextDecoder().decode(result.stderr).trim()}`,
      { provider: ctx.provider },
    );
  }
  const run = { dir: request.dir, pid: Number(text) };
  if (request.after === undefined) return run;
  return { ...run, afterResult: { ...result, stdout: result.stdout.subarray(newline + 1) } };
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
