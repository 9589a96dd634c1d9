import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readFileSync,
  rmdirSync,
  writeFileSync,
} from "node:fs";
import { readdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { localError } from "./local-errors.js";
import { sendSignal } from "./local-procfs.js";

/** The limits a sandbox's cgroup enforces. */
export interface CgroupLimits {
  readonly pids: number;
  readonly memoryBytes: number;
  /** CPU bandwidth in CPUs; `undefined`: no hard limit, only a lower weight than host processes. */
  readonly vcpus?: number | undefined;
}

/** Where a sandbox's cgroup lives: one directory per v1 hierarchy, or one v2 directory. */
export type SandboxCgroup =
  | {
      readonly kind: "v1";
      /** The sandbox's directory in each hierarchy used (`pids`, `memory`, `cpu`, `cpuacct`, `freezer`). */
      readonly dirs: Readonly<Record<string, string>>;
    }
  | { readonly kind: "v2"; readonly dir: string };

/** How this host lets the provider make cgroups, or why it does not. */
export type CgroupSupport =
  | { readonly kind: "v1"; readonly bases: Readonly<Record<string, string>> }
  | { readonly kind: "v2"; readonly base: string }
  | { readonly kind: "none"; readonly reason: string };

/** v1 controllers a sandbox group is made in; `pids` and `memory` are required, the others used when present. */
const V1_REQUIRED = ["pids", "memory"] as const;
const V1_OPTIONAL = ["cpu", "cpuacct", "freezer"] as const;
const V2_CONTROLLERS = ["pids", "memory", "cpu"] as const;
/** The directory under which this provider makes its groups (one per host user). */
const BASE_NAME = `sbox-local-${typeof process.getuid === "function" ? process.getuid() : 0}`;
/** Name of the per-command child group (tracks one command's processes; v2 also needs leaves). */
export const COMMAND_GROUP_PREFIX = "c-";
const FREEZE_TIMEOUT_MS = 5_000;

interface MountInfo {
  readonly root: string;
  readonly mountPoint: string;
  readonly fsType: string;
  readonly superOptions: string[];
}

function mounts(): MountInfo[] {
  const found: MountInfo[] = [];
  for (const line of readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
    const separator = line.indexOf(" - ");
    if (separator < 0) continue;
    const head = line.slice(0, separator).split(" ");
    const tail = line.slice(separator + 3).split(" ");
    const decodeOctal = (value: string) =>
      value.replace(/\\(\d{3})/g, (_, octal) => String.fromCharCode(parseInt(octal, 8)));
    found.push({
      root: decodeOctal(head[3] ?? "/"),
      mountPoint: decodeOctal(head[4] ?? ""),
      fsType: tail[0] ?? "",
      superOptions: (tail[2] ?? "").split(","),
    });
  }
  return found;
}

/** This process's cgroup per v1 controller, and its v2 cgroup (`""` key). */
function ownCgroups(): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
    const [, controllers, path] = line.split(/:(.*?):/, 3) as [
      string,
      string | undefined,
      string | undefined,
    ];
    if (controllers === undefined || path === undefined) continue;
    if (controllers === "") own.set("", path);
    for (const controller of controllers.split(",")) if (controller) own.set(controller, path);
  }
  return own;
}

/** The directory of cgroup `path` under a mount whose root is `mountRoot`, or undefined if outside it. */
function underMount(mount: MountInfo, path: string): string | undefined {
  if (mount.root === "/") return join(mount.mountPoint, path);
  if (path === mount.root || path.startsWith(`${mount.root}/`))
    return join(mount.mountPoint, path.slice(mount.root.length));
  return undefined;
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function detectV2(all: MountInfo[], own: Map<string, string>): CgroupSupport | undefined {
  const mount = all.find((m) => m.fsType === "cgroup2");
  const path = own.get("");
  if (!mount || path === undefined) return undefined;
  const ownDir = underMount(mount, path);
  if (!ownDir) return undefined;
  let available: string[];
  try {
    available = readFileSync(join(mount.mountPoint, "cgroup.controllers"), "utf8").trim().split(/\s+/);
  } catch {
    return undefined;
  }
  if (!V2_CONTROLLERS.every((controller) => available.includes(controller))) return undefined;
  // The nearest directory above this process's own group that it may write (a process's own group holds
  // processes, so it cannot enable controllers for children): the root as root, a delegated slice otherwise.
  let dir = ownDir;
  // The root group is the exception to "no processes where controllers are enabled": it may be used as is.
  let chosen: string | undefined = ownDir === mount.mountPoint && writable(ownDir) ? ownDir : undefined;
  while (dir.startsWith(mount.mountPoint)) {
    const parent = dir === mount.mountPoint ? undefined : join(dir, "..");
    if (dir !== ownDir && writable(dir) && writable(join(dir, "cgroup.subtree_control"))) chosen = dir;
    else if (chosen !== undefined) break;
    if (parent === undefined) break;
    dir = parent;
  }
  if (chosen === undefined) {
    return {
      kind: "none",
      reason: `no cgroup above ${ownDir} is writable by this user (no delegated cgroup)`,
    };
  }
  const base = join(chosen, BASE_NAME);
  try {
    enableControllers(chosen);
    mkdirSync(base, { recursive: true });
    enableControllers(base);
  } catch (error) {
    return {
      kind: "none",
      reason: `cannot enable the pids, memory and cpu controllers below ${chosen} (${(error as { code?: string }).code ?? (error as Error).message})`,
    };
  }
  return { kind: "v2", base };
}

function detectV1(all: MountInfo[], own: Map<string, string>): CgroupSupport {
  const bases: Record<string, string> = {};
  for (const controller of [...V1_REQUIRED, ...V1_OPTIONAL]) {
    const mount = all.find((m) => m.fsType === "cgroup" && m.superOptions.includes(controller));
    const path = own.get(controller);
    if (!mount || path === undefined) continue;
    const ownDir = underMount(mount, path);
    if (ownDir) bases[controller] = join(ownDir, BASE_NAME);
  }
  const missing = V1_REQUIRED.filter((controller) => !bases[controller]);
  if (missing.length > 0) return { kind: "none", reason: `no ${missing.join(" or ")} cgroup hierarchy` };
  for (const base of Object.values(bases)) {
    try {
      mkdirSync(base, { recursive: true });
      accessSync(base, constants.W_OK);
    } catch (error) {
      return {
        kind: "none",
        reason: `cannot make cgroups under ${join(base, "..")} (${(error as { code?: string }).code ?? "error"})`,
      };
    }
  }
  return { kind: "v1", bases };
}

let support: CgroupSupport | undefined;

/**
 * Whether (and where) this host program can make cgroups for its sandboxes, decided once: cgroup v2 where a
 * writable group above this process has the pids, memory and cpu controllers (root, or a delegated slice),
 * else the v1 hierarchies of those controllers below this process's own group in each (a hybrid host).
 * Groups are made below this process's own, so the limits of the cgroup it already sits in keep applying.
 */
export function cgroupSupport(): CgroupSupport {
  if (support) return support;
  try {
    const all = mounts();
    const own = ownCgroups();
    support = detectV2(all, own) ?? detectV1(all, own);
  } catch (error) {
    support = { kind: "none", reason: `cannot read this process's cgroups: ${(error as Error).message}` };
  }
  return support;
}

function enableControllers(dir: string): void {
  const wanted = V2_CONTROLLERS.map((controller) => `+${controller}`).join(" ");
  writeFileSync(join(dir, "cgroup.subtree_control"), wanted);
}

/** Writes `value` to a cgroup file when the file exists (an optional knob of this kernel). */
function writeKnob(dir: string, file: string, value: string, required = true): void {
  const path = join(dir, file);
  if (!required && !existsSync(path)) return;
  writeFileSync(path, value);
}

/** Makes the cgroup of sandbox `id` with `limits`; idempotent (a stopped sandbox's group is reused). */
export function createSandboxCgroup(id: string, limits: CgroupLimits): SandboxCgroup {
  const found = cgroupSupport();
  if (found.kind === "none") throw localError("Provider", `cgroups are unavailable: ${found.reason}`);
  if (found.kind === "v2") {
    mkdirSync(found.base, { recursive: true });
    const dir = join(found.base, id);
    // Its processes live in leaves below it (the holder's, each command's): limits here cover them all.
    mkdirSync(join(dir, "holder"), { recursive: true });
    writeKnob(dir, "pids.max", String(limits.pids));
    writeKnob(dir, "memory.max", String(limits.memoryBytes));
    writeKnob(dir, "memory.swap.max", "0", false);
    writeKnob(
      dir,
      "cpu.max",
      limits.vcpus === undefined ? "max 100000" : `${Math.round(limits.vcpus * 100_000)} 100000`,
    );
    writeKnob(dir, "cpu.weight", "50", false);
    return { kind: "v2", dir };
  }
  const dirs: Record<string, string> = {};
  for (const [controller, base] of Object.entries(found.bases)) {
    const dir = join(base, id);
    mkdirSync(dir, { recursive: true });
    dirs[controller] = dir;
  }
  writeKnob(dirs.pids!, "pids.max", String(limits.pids));
  writeKnob(dirs.memory!, "memory.limit_in_bytes", String(limits.memoryBytes));
  // No swap either (memsw exists only with swap accounting); it must not be below the memory limit.
  writeKnob(dirs.memory!, "memory.memsw.limit_in_bytes", String(limits.memoryBytes), false);
  if (dirs.cpu) {
    writeKnob(dirs.cpu, "cpu.cfs_period_us", "100000");
    writeKnob(
      dirs.cpu,
      "cpu.cfs_quota_us",
      limits.vcpus === undefined ? "-1" : String(Math.round(limits.vcpus * 100_000)),
    );
    writeKnob(dirs.cpu, "cpu.shares", "512", false);
  }
  return { kind: "v1", dirs };
}

/** The group that tracks one command (`tag`), made on demand. */
export function commandGroup(cgroup: SandboxCgroup, tag: string, reuse = false): string {
  const parent = cgroup.kind === "v2" ? cgroup.dir : cgroup.dirs.pids!;
  if (reuse) {
    const spare = spareGroups.get(parent)?.pop();
    // Still there (a stop or destroy removes the sandbox's groups): no mkdir on the command's way.
    if (spare !== undefined && existsSync(spare)) return spare;
  }
  const dir = join(parent, `${COMMAND_GROUP_PREFIX}${tag}`);
  try {
    mkdirSync(dir);
  } catch (error) {
    if ((error as { code?: string }).code !== "EEXIST") throw error;
  }
  return dir;
}

/**
 * Empty command groups of finished foreground commands, by parent group, for the next foreground command to
 * reuse: making a cgroup is the costliest step of starting a command after the spawn itself. A foreground
 * command's group is known only to its own run (background commands are found by their tag's group, so they
 * always get a fresh one).
 */
const spareGroups = new Map<string, string[]>();
/** Spare groups kept per sandbox, and sandboxes kept: enough for a few commands in parallel, never a leak. */
const SPARES_PER_PARENT = 4;
const SPARE_PARENTS = 256;

/**
 * Hands the group of a finished foreground command back for reuse when nothing runs in it any more (its
 * `cgroup.procs` is empty: no process of the sandbox can add itself to a cgroup), else tries to remove it.
 */
export async function recycleCommandGroup(group: string): Promise<void> {
  const parent = dirname(group);
  const spares = spareGroups.get(parent) ?? [];
  let empty = false;
  try {
    empty = (await readFile(join(group, "cgroup.procs"), "utf8")).trim() === "";
  } catch {
    return; // removed with its sandbox
  }
  if (empty && spares.length < SPARES_PER_PARENT) {
    if (!spareGroups.has(parent) && spareGroups.size >= SPARE_PARENTS) spareGroups.clear();
    spares.push(group);
    spareGroups.set(parent, spares);
    return;
  }
  await rmdir(group).catch(() => {});
}

/**
 * The `cgroup.procs` files a process writes its pid to so that it and everything it starts belong to the
 * sandbox: the command's own group (v2, and the v1 pids hierarchy), and the sandbox's group in every other
 * v1 hierarchy.
 */
export function joinFiles(cgroup: SandboxCgroup, group: string): string[] {
  if (cgroup.kind === "v2") return [join(group, "cgroup.procs")];
  // Co-mounted controllers (cpu,cpuacct) share one directory: join it once.
  const others = new Set(
    Object.entries(cgroup.dirs)
      .filter(([controller]) => controller !== "pids")
      .map(([, dir]) => join(dir, "cgroup.procs")),
  );
  return [join(group, "cgroup.procs"), ...others];
}

/** The group the holder's processes join (v2 leaves only hold processes; v1 uses the sandbox's own). */
/**
 * Where the sandbox's own cgroup shows inside its view (read-only): the sandbox's directory as
 * `/sys/fs/cgroup` on v2; on v1 its memory and CPU accounting directories as `/sys/fs/cgroup/<controller>`,
 * the places programs (and the core's metrics emulation) look for their own usage.
 */
export function cgroupViews(cgroup: SandboxCgroup): { host: string; sandbox: string }[] {
  if (cgroup.kind === "v2") return [{ host: cgroup.dir, sandbox: "/sys/fs/cgroup" }];
  return ["memory", "cpuacct"].flatMap((controller) => {
    const host = cgroup.dirs[controller];
    return host === undefined ? [] : [{ host, sandbox: `/sys/fs/cgroup/${controller}` }];
  });
}

export function holderGroup(cgroup: SandboxCgroup): string {
  return cgroup.kind === "v2" ? join(cgroup.dir, "holder") : cgroup.dirs.pids!;
}

async function procsIn(dir: string): Promise<number[]> {
  let text: string;
  try {
    text = await readFile(join(dir, "cgroup.procs"), "utf8");
  } catch (error) {
    // Removed (ENOENT), or being removed (ENODEV): nothing runs in it.
    const code = (error as { code?: string }).code;
    if (code === "ENOENT" || code === "ENODEV") return [];
    throw localError("Provider", `cannot read the processes of cgroup ${dir}`, error);
  }
  return text.split("\n").filter(Boolean).map(Number);
}

/** Every process in `dir` and its child groups (the kernel's own list: nothing can hide from it). */
export async function processesOf(dir: string): Promise<number[]> {
  const pids = await procsIn(dir);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return pids;
  }
  for (const name of names) {
    if (!name.startsWith(COMMAND_GROUP_PREFIX) && name !== "holder") continue;
    pids.push(...(await procsIn(join(dir, name))));
  }
  return pids;
}

/** The group listing all the sandbox's processes (the one every process joins). */
export function trackingDir(cgroup: SandboxCgroup): string {
  return cgroup.kind === "v2" ? cgroup.dir : cgroup.dirs.pids!;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Kills every process of a group and its children, and resolves once the group is empty; rejects when
 * processes survive (they cannot, short of a kernel that does not deliver SIGKILL). v2 uses `cgroup.kill`;
 * v1 signals the kernel's list again until it is empty (a pids limit bounds how fast it can refill).
 */
export async function killGroup(dir: string, kind: "v1" | "v2"): Promise<void> {
  if (kind === "v2" && existsSync(join(dir, "cgroup.kill"))) {
    await writeFile(join(dir, "cgroup.kill"), "1").catch((error: unknown) => {
      if ((error as { code?: string }).code !== "ENOENT") throw error;
    });
  }
  for (let round = 0; ; round++) {
    const pids = await processesOf(dir);
    if (pids.length === 0) return;
    if (round > 500) {
      throw localError("Provider", `${pids.length} processes of cgroup ${dir} survived SIGKILL`);
    }
    for (const pid of pids) sendSignal(pid, "SIGKILL");
    await sleep(round < 10 ? 2 : 20);
  }
}

async function freezeV1(
  dir: string,
  state: "FROZEN" | "THAWED",
  timeoutMs = FREEZE_TIMEOUT_MS,
): Promise<void> {
  await writeFile(join(dir, "freezer.state"), state);
  const deadline = Date.now() + timeoutMs;
  while ((await readFile(join(dir, "freezer.state"), "utf8")).trim() !== state) {
    if (Date.now() > deadline) throw localError("Provider", `cgroup ${dir} did not reach ${state}`);
    await sleep(5);
  }
}

async function freezeV2(dir: string, frozen: boolean): Promise<void> {
  await writeFile(join(dir, "cgroup.freeze"), frozen ? "1" : "0");
  const deadline = Date.now() + FREEZE_TIMEOUT_MS;
  for (;;) {
    const events = await readFile(join(dir, "cgroup.events"), "utf8");
    if (events.includes(`frozen ${frozen ? 1 : 0}`)) return;
    if (Date.now() > deadline)
      throw localError("Provider", `cgroup ${dir} did not ${frozen ? "freeze" : "thaw"}`);
    await sleep(5);
  }
}

/** Whether the sandbox's processes can be frozen by the kernel (v2, or a v1 freezer hierarchy). */
export function canFreeze(cgroup: SandboxCgroup): boolean {
  return cgroup.kind === "v2" || cgroup.dirs.freezer !== undefined;
}

/** Freezes (`true`) or thaws every process of the sandbox at once. */
export async function freezeSandbox(cgroup: SandboxCgroup, frozen: boolean): Promise<void> {
  if (cgroup.kind === "v2") await freezeV2(cgroup.dir, frozen);
  else if (cgroup.dirs.freezer) await freezeV1(cgroup.dirs.freezer, frozen ? "FROZEN" : "THAWED");
  else throw localError("Provider", "no freezer cgroup hierarchy");
}

/**
 * Kills every process of the sandbox. A frozen group cannot fork while its list is read, so the kill reaches
 * all of it in one pass; the group is thawed so the signals take effect, then waited for until it is empty.
 */
export async function killSandboxGroup(cgroup: SandboxCgroup): Promise<void> {
  if (cgroup.kind === "v2") {
    await killGroup(cgroup.dir, "v2");
    return;
  }
  const freezer = cgroup.dirs.freezer;
  if (freezer && existsSync(freezer)) {
    // Freezing first keeps the group from forking while it is killed. A v1 freezer can stay FREEZING (a task
    // in an uninterruptible wait): then the group is thawed and killed without it, until it is empty.
    const frozen = await freezeV1(freezer, "FROZEN", 1_000).then(
      () => true,
      () => false,
    );
    if (frozen) for (const pid of await processesOf(freezer)) sendSignal(pid, "SIGKILL");
    await freezeV1(freezer, "THAWED");
    await killGroup(freezer, "v1");
  }
  await killGroup(cgroup.dirs.pids!, "v1");
}

/**
 * Removes a group; a group whose last processes are still exiting (killed, not yet reaped) is busy for a
 * moment, so EBUSY is retried for a while before it is an error.
 */
async function removeGroup(dir: string): Promise<void> {
  const deadline = Date.now() + FREEZE_TIMEOUT_MS;
  for (;;) {
    try {
      rmdirSync(dir);
      return;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === "ENOENT") return;
      if (code !== "EBUSY" || Date.now() > deadline) {
        throw localError("Provider", `cannot remove cgroup ${dir} (${code})`, error);
      }
      await sleep(10);
    }
  }
}

/**
 * Removes the sandbox's groups once every process is gone. A command that was starting while the sandbox was
 * killed may still make its group (or even join it): each round kills what is there and lists the groups
 * again, until the sandbox's group can be removed.
 */
export async function removeSandboxCgroup(cgroup: SandboxCgroup): Promise<void> {
  const parent = trackingDir(cgroup);
  const deadline = Date.now() + FREEZE_TIMEOUT_MS;
  for (;;) {
    await killGroup(parent, cgroup.kind);
    let names: string[] = [];
    try {
      names = await readdir(parent);
    } catch {
      // gone already
    }
    for (const name of names)
      if (name.startsWith(COMMAND_GROUP_PREFIX)) await removeGroup(join(parent, name));
    try {
      rmdirSync(parent);
      break;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === "ENOENT") break;
      if (code !== "EBUSY" || Date.now() > deadline) {
        throw localError("Provider", `cannot remove cgroup ${parent} (${code})`, error);
      }
      await sleep(10);
    }
  }
  const dirs = cgroup.kind === "v2" ? [join(cgroup.dir, "holder"), cgroup.dir] : Object.values(cgroup.dirs);
  for (const dir of new Set(dirs)) {
    await removeGroup(dir);
    // The provider's base directory goes too once no sandbox of this user is left in it.
    try {
      rmdirSync(join(dir, ".."));
    } catch {
      // other sandboxes' groups are still there
    }
  }
}

/** Memory in use and its limit, and CPU time used (nanoseconds), as the kernel accounts them for the sandbox. */
export async function cgroupUsage(cgroup: SandboxCgroup): Promise<{
  memoryBytes?: number | undefined;
  memoryLimitBytes?: number | undefined;
  cpuNanoseconds?: number | undefined;
}> {
  const read = async (path: string) => {
    try {
      return (await readFile(path, "utf8")).trim();
    } catch {
      return undefined;
    }
  };
  const number = (text: string | undefined) =>
    text === undefined || text === "max" ? undefined : Number(text);
  if (cgroup.kind === "v2") {
    const stat = await read(join(cgroup.dir, "cpu.stat"));
    const usage = stat ? /usage_usec (\d+)/.exec(stat)?.[1] : undefined;
    return {
      memoryBytes: number(await read(join(cgroup.dir, "memory.current"))),
      memoryLimitBytes: number(await read(join(cgroup.dir, "memory.max"))),
      cpuNanoseconds: usage === undefined ? undefined : Number(usage) * 1000,
    };
  }
  return {
    memoryBytes: number(await read(join(cgroup.dirs.memory!, "memory.usage_in_bytes"))),
    memoryLimitBytes: number(await read(join(cgroup.dirs.memory!, "memory.limit_in_bytes"))),
    cpuNanoseconds: cgroup.dirs.cpuacct
      ? number(await read(join(cgroup.dirs.cpuacct, "cpuacct.usage")))
      : undefined,
  };
}

/** The limits the kernel really has for the sandbox's group, read back (for getInfo and the containment tests). */
export function enforcedLimits(cgroup: SandboxCgroup): {
  pids?: number | undefined;
  memoryBytes?: number | undefined;
} {
  const read = (path: string) => {
    try {
      const text = readFileSync(path, "utf8").trim();
      return text === "max" ? undefined : Number(text);
    } catch {
      return undefined;
    }
  };
  if (cgroup.kind === "v2") {
    return { pids: read(join(cgroup.dir, "pids.max")), memoryBytes: read(join(cgroup.dir, "memory.max")) };
  }
  return {
    pids: read(join(cgroup.dirs.pids!, "pids.max")),
    memoryBytes: read(join(cgroup.dirs.memory!, "memory.limit_in_bytes")),
  };
}
