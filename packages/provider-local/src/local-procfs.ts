import { readdir, readFile, readlink } from "node:fs/promises";
import { constants } from "node:os";

/** Environment variable naming the sandbox a process belongs to; set on every process the provider starts. */
export const SANDBOX_TAG_VARIABLE = "SBOX_LOCAL_SANDBOX";
/** Environment variable naming the one command (foreground or background) a process belongs to. */
export const COMMAND_TAG_VARIABLE = "SBOX_LOCAL_COMMAND";

/** What `/proc/<pid>/stat` says about a process. */
export interface ProcStat {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
  /** One letter: R, S, D, Z, T... */
  readonly state: string;
  /** User plus system CPU time, in clock ticks. */
  readonly cpuTicks: number;
  /** Start time after boot, in clock ticks: with the pid, identifies a process across pid reuse. */
  readonly startTime: number;
  /** Resident set size in pages. */
  readonly rssPages: number;
}

/** Parses `/proc/<pid>/stat`; `undefined` when the process is gone. */
export async function readProcStat(pid: number): Promise<ProcStat | undefined> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name is in parentheses and may itself contain spaces and parentheses.
  const close = text.lastIndexOf(")");
  if (close < 0) return undefined;
  const fields = text.slice(close + 2).split(" ");
  const num = (index: number) => Number(fields[index]);
  return {
    pid,
    state: fields[0] ?? "?",
    ppid: num(1),
    pgid: num(2),
    cpuTicks: num(11) + num(12),
    startTime: num(19),
    rssPages: num(21),
  };
}

/** True when `pid` runs (not a zombie) and, when given, started at `startTime` (so it is the same process). */
export async function isProcessAlive(pid: number, startTime?: number): Promise<boolean> {
  const stat = await readProcStat(pid);
  if (!stat || stat.state === "Z" || stat.state === "X") return false;
  return startTime === undefined || stat.startTime === startTime;
}

async function listPids(): Promise<number[]> {
  const names = await readdir("/proc");
  const pids: number[] = [];
  for (const name of names) {
    const first = name.charCodeAt(0);
    if (first >= 48 && first <= 57) pids.push(Number(name));
  }
  return pids;
}

/**
 * Every live process whose initial environment holds `name=value`. The environment is inherited by every
 * descendant, also by ones that start their own session or process group, so this finds a whole tree that
 * a process-group kill would miss. Processes of other users are unreadable and skipped.
 */
export async function findTaggedProcesses(name: string, value: string): Promise<ProcStat[]> {
  const needle = Buffer.from(`${name}=${value}\0`);
  const pids = await listPids();
  const found: ProcStat[] = [];
  const own = process.pid;
  await Promise.all(
    pids.map(async (pid) => {
      if (pid === own) return;
      let environ: Buffer;
      try {
        environ = await readFile(`/proc/${pid}/environ`);
      } catch {
        return;
      }
      // The needle must start a variable: at offset 0 or right after a NUL.
      let at = environ.indexOf(needle);
      while (at > 0 && environ[at - 1] !== 0) at = environ.indexOf(needle, at + 1);
      if (at < 0) return;
      const stat = await readProcStat(pid);
      if (stat && stat.state !== "Z" && stat.state !== "X") found.push(stat);
    }),
  );
  return found;
}

/** The number of a signal name such as `"SIGTERM"`; `undefined` for unknown names. */
export function signalNumber(signal: string): number | undefined {
  return (constants.signals as Record<string, number | undefined>)[signal];
}

/** The name of a signal number, e.g. 15 -> `"SIGTERM"`. */
export function signalName(signal: number): string | undefined {
  for (const [name, number] of Object.entries(constants.signals)) if (number === signal) return name;
  return undefined;
}

/** Sends `signal` to a process or (negative pid) a process group; false when there was nobody to signal. */
export function sendSignal(pid: number, signal: string | number): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Who a tree signal must spare. */
export interface SignalTreeOptions {
  /** Process groups to signal on the first pass (the command's own group). */
  readonly groups?: readonly number[] | undefined;
  /**
   * For catchable signals only: processes that must not get the signal because they would die of it
   * while their command lives on (the wrapper that records the exit, bubblewrap's monitor and init).
   */
  readonly spare?:
    | {
        readonly pids?: readonly number[] | undefined;
        readonly exe?: string | undefined;
        /**
         * Also spare copies of this process that have not yet become another program: between fork and exec
         * a child still runs its parent's signal handlers, so a wrapper's `trap` would swallow the signal
         * meant for the command about to start.
         */
        readonly forksOf?: number | undefined;
      }
    | undefined;
}

async function cmdlineOf(pid: number): Promise<Buffer | undefined> {
  try {
    return await readFile(`/proc/${pid}/cmdline`);
  } catch {
    return undefined;
  }
}

async function exeOf(pid: number): Promise<string | undefined> {
  try {
    return await readlink(`/proc/${pid}/exe`);
  } catch {
    return undefined;
  }
}

/**
 * Signals every process carrying the tag. With `SIGKILL` (and `SIGSTOP`/`SIGCONT`) every process is signalled,
 * groups included, and a kill repeats until no tagged process is left, because a tree can fork while it is
 * being killed. Catchable signals go to the tagged processes except the spared ones, once. Returns how many
 * processes were signalled on the last pass (0 after a kill means the tree is gone).
 */
export async function signalTree(
  tag: { name: string; value: string },
  signal: string,
  options: SignalTreeOptions = {},
): Promise<number> {
  const forced = signal === "SIGKILL" || signal === "SIGSTOP" || signal === "SIGCONT";
  const sparedPids = new Set(forced ? [] : (options.spare?.pids ?? []));
  const sparedExe = forced ? undefined : options.spare?.exe;
  const forksOf = forced ? undefined : options.spare?.forksOf;
  const parentCmdline = forksOf === undefined ? undefined : await cmdlineOf(forksOf);
  for (let round = 0; ; round++) {
    // Groups only on the first pass: once their members are gone, a group id may be reused by strangers.
    if (round === 0 && (forced || !options.spare))
      for (const group of options.groups ?? []) sendSignal(-group, signal);
    const tagged = await findTaggedProcesses(tag.name, tag.value);
    let signalled = 0;
    for (const proc of tagged) {
      if (sparedPids.has(proc.pid)) continue;
      if (sparedExe !== undefined && (await exeOf(proc.pid)) === sparedExe) continue;
      if (parentCmdline !== undefined && proc.ppid === forksOf) {
        const cmdline = await cmdlineOf(proc.pid);
        if (cmdline?.equals(parentCmdline)) continue;
      }
      if (sendSignal(proc.pid, signal)) signalled++;
    }
    if (signal !== "SIGKILL") return signalled;
    if (tagged.length === 0) return 0;
    if (round >= 200) return tagged.length;
    await sleep(round < 5 ? 2 : 20);
  }
}
