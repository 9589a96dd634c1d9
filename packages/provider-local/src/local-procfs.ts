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

/** How many `/proc` files a scan has open at once: enough to be quick, far from any descriptor limit. */
const SCAN_CONCURRENCY = 8;

/** Runs `work` over `items`, at most `SCAN_CONCURRENCY` at a time, in order of completion. */
async function bounded<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(SCAN_CONCURRENCY, items.length) }, async () => {
    while (next < items.length) await work(items[next++] as T);
  });
  await Promise.all(lanes);
}

/** True for errors that only mean "this process is gone" (it exited between the listing and the read). */
function isGone(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === "ENOENT" || code === "ESRCH";
}

/** A lookup that could not look at every process: never taken for "none found". */
function lookupFailed(pid: number, error: unknown): Error {
  return Object.assign(
    new Error(
      `cannot read /proc/${pid}: ${(error as Error).message} (the lookup of a sandbox's processes must not miss one)`,
    ),
    { code: (error as { code?: string }).code, cause: error },
  );
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The environment of `pid`, or `undefined` when it is certainly not one of this program's processes (gone,
 * a zombie, another user's, one with capabilities this program lacks or, for a host-wide scan, one inside
 * a sandbox's PID namespace). A process of this user is unreadable for a moment while it execs a program (it
 * is not dumpable until the new program is set up): it is read again a few times before the lookup fails.
 */
async function readEnviron(pid: number, hostWide: boolean): Promise<Buffer | undefined> {
  return readUnlessForeign(pid, () => readFile(`/proc/${pid}/environ`), hostWide);
}

/** Reads something of `/proc/<pid>` that needs ptrace access to it (see `readEnviron`). */
async function readUnlessForeign<T>(
  pid: number,
  read: () => Promise<T>,
  hostWide: boolean,
): Promise<T | undefined> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      if (isGone(error)) return undefined;
      const code = (error as { code?: string }).code;
      if (code !== "EACCES" && code !== "EPERM") throw lookupFailed(pid, error);
      // A process inside a sandbox is counted only by a scan of that sandbox's processes.
      if (hostWide && (await insideOtherPidNamespace(pid))) return undefined;
      if (await isForeign(pid)) return undefined;
      if (attempt >= 20) throw lookupFailed(pid, error);
      await sleep(attempt < 5 ? 1 : 10);
    }
  }
}

/** Whether the environment block `environ` holds `needle` as a whole variable. */
function holdsVariable(environ: Buffer, needle: Buffer): boolean {
  // The needle must start a variable: at offset 0 or right after a NUL.
  let at = environ.indexOf(needle);
  while (at > 0 && environ[at - 1] !== 0) at = environ.indexOf(needle, at + 1);
  return at >= 0;
}

let ownCapabilities: bigint | undefined;
let ownPidNamespace: string | undefined;

/**
 * Whether `pid` lives in a PID namespace other than this program's: inside a sandbox. Such a process is never
 * one of the launchers a host-wide scan looks for (they all run in the host's namespace), and is found
 * through its sandbox's own namespace or cgroup instead.
 */
async function insideOtherPidNamespace(pid: number): Promise<boolean> {
  ownPidNamespace ??= await readlink("/proc/self/ns/pid");
  try {
    return (await readlink(`/proc/${pid}/ns/pid`)) !== ownPidNamespace;
  } catch {
    return false;
  }
}

/** The permitted capabilities and real uid in a `/proc/<pid>/status` text. */
function identityIn(status: string): { uid: number; capabilities: bigint } {
  return {
    uid: Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]),
    capabilities: BigInt(`0x${/^CapPrm:\s+([0-9a-f]+)/m.exec(status)?.[1] ?? "0"}`),
  };
}

/**
 * Whether a process this program cannot read is certainly none of its own: a zombie (it has exited), another
 * user's, or one holding capabilities this program lacks (such as the host's init). Every process the provider starts runs as
 * this user (or, under root, a sandbox user it can read) with at most this program's capabilities, so
 * neither can be one of them; anything else that cannot be read makes the lookup fail.
 */
async function isForeign(pid: number): Promise<boolean> {
  let status: string;
  try {
    status = await readFile(`/proc/${pid}/status`, "utf8");
  } catch (error) {
    if (isGone(error)) return true;
    throw lookupFailed(pid, error);
  }
  // A zombie has no memory left to read: it has exited, whoever's it was.
  if (/^State:\s+[ZX]/m.test(status)) return true;
  ownCapabilities ??= identityIn(await readFile("/proc/self/status", "utf8")).capabilities;
  const other = identityIn(status);
  const uid = typeof process.getuid === "function" ? process.getuid() : 0;
  return other.uid !== uid || (other.capabilities & ~ownCapabilities) !== 0n;
}

/**
 * Every live process among `pids` (all of the host's when omitted) whose environment holds `name=value`. The
 * environment is inherited by every descendant, also by ones that start their own session or process group,
 * so this finds a whole tree that a process-group kill would miss. At most a few files are open at once, and
 * a process that cannot be read is an error unless it belongs to another user (which none of this
 * provider's processes do): a failed read is never taken for an untagged process.
 */
export async function findTaggedProcesses(
  name: string,
  value: string,
  pids?: readonly number[],
): Promise<ProcStat[]> {
  const needle = Buffer.from(`${name}=${value}\0`);
  const candidates = pids ?? (await listPids());
  const found: ProcStat[] = [];
  const own = process.pid;
  await bounded(candidates, async (pid) => {
    if (pid === own) return;
    const environ = await readEnviron(pid, pids === undefined);
    if (environ === undefined) return;
    if (!holdsVariable(environ, needle)) return;
    const stat = await readProcStat(pid);
    if (stat && stat.state !== "Z" && stat.state !== "X") found.push(stat);
  });
  return found;
}

/**
 * Every live process in the PID namespace `namespace` (as `readlink /proc/<pid>/ns/pid` names it). Reading
 * the link opens nothing, so the scan cannot run out of descriptors; a process whose link cannot be read
 * although it is this user's is an error, not a non-member.
 */
export async function pidNamespaceMembers(namespace: string): Promise<ProcStat[]> {
  const found: ProcStat[] = [];
  const own = process.pid;
  await bounded(await listPids(), async (pid) => {
    if (pid === own) return;
    const link = await readUnlessForeign(pid, () => readlink(`/proc/${pid}/ns/pid`), false);
    if (link === undefined) return;
    if (link !== namespace) return;
    const stat = await readProcStat(pid);
    if (stat && stat.state !== "Z" && stat.state !== "X") found.push(stat);
  });
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
        /** Executables (as `/proc/<pid>/exe` names them) of launchers that must outlive the signal. */
        readonly exes?: readonly string[] | undefined;
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
 * How many of each process's ancestors are among `procs` (by ppid; a chain is followed at most as far as
 * `procs` is long, so a pid reused into a loop cannot hang it): sorting by it signals a parent first.
 */
function ancestryDepths(procs: readonly ProcStat[]): (proc: ProcStat) => number {
  const byPid = new Map(procs.map((proc) => [proc.pid, proc]));
  const depths = new Map<number, number>();
  return (proc) => {
    const known = depths.get(proc.pid);
    if (known !== undefined) return known;
    let depth = 0;
    for (let parent = byPid.get(proc.ppid); parent && depth < procs.length; parent = byPid.get(parent.ppid))
      depth++;
    depths.set(proc.pid, depth);
    return depth;
  };
}

/** Finds the processes of one tree (a command's, a sandbox's), fresh on every call. */
export type ProcessFinder = () => Promise<ProcStat[]>;

/** A finder for the processes carrying `name=value` in their environment, anywhere on the host. */
export function taggedProcesses(tag: { name: string; value: string }): ProcessFinder {
  return () => findTaggedProcesses(tag.name, tag.value);
}

/**
 * Signals every process `find` returns. With `SIGKILL` (and `SIGSTOP`/`SIGCONT`) every process is signalled,
 * groups included, and a kill repeats until none is left, because a tree can fork while it is being killed.
 * Catchable signals go to the processes except the spared ones, once. Returns how many processes were
 * signalled on the last pass (0 after a kill means the tree is gone).
 */
export async function signalTree(
  find: ProcessFinder,
  signal: string,
  options: SignalTreeOptions = {},
): Promise<number> {
  const forced = signal === "SIGKILL" || signal === "SIGSTOP" || signal === "SIGCONT";
  const sparedPids = new Set(forced ? [] : (options.spare?.pids ?? []));
  const sparedExes = new Set(forced ? [] : (options.spare?.exes ?? []));
  const forksOf = forced ? undefined : options.spare?.forksOf;
  const parentCmdline = forksOf === undefined ? undefined : await cmdlineOf(forksOf);
  for (let round = 0; ; round++) {
    // Groups only on the first pass: once their members are gone, a group id may be reused by strangers.
    if (round === 0 && (forced || !options.spare))
      for (const group of options.groups ?? []) sendSignal(-group, signal);
    const tagged = await find();
    // Decide every target first and then signal them all in one synchronous pass, oldest first: a parent
    // before the children it started. The finder's order is arbitrary (reads run in parallel, pids wrap),
    // and a shell whose children died of the signal before it got its own would end its `wait` with 0 in
    // the gap and report a killed command as a success.
    const targets: ProcStat[] = [];
    for (const proc of tagged) {
      if (sparedPids.has(proc.pid)) continue;
      if (sparedExes.size > 0 && sparedExes.has((await exeOf(proc.pid)) ?? "")) continue;
      if (parentCmdline !== undefined && proc.ppid === forksOf) {
        const cmdline = await cmdlineOf(proc.pid);
        if (cmdline?.equals(parentCmdline)) continue;
      }
      targets.push(proc);
    }
    const depth = ancestryDepths(tagged);
    targets.sort((a, b) => depth(a) - depth(b) || a.startTime - b.startTime);
    let signalled = 0;
    for (const proc of targets) if (sendSignal(proc.pid, signal)) signalled++;
    if (signal !== "SIGKILL") return signalled;
    if (tagged.length === 0) return 0;
    if (round >= 200) return tagged.length;
    await sleep(round < 5 ? 2 : 20);
  }
}
