import { randomBytes } from "node:crypto";
import { chmod, readdir, readFile, readlink, rename, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { markAllKilled } from "./local-background.js";
import { canFreeze, freezeSandbox, killSandboxGroup, removeSandboxCgroup } from "./local-cgroups.js";
import type { CommandTarget } from "./local-command.js";
import { detachFuseDisk, releaseStateRootIfIdle, unmountBelow } from "./local-disk.js";
import { localError } from "./local-errors.js";
import { liveHolder, stopHolder } from "./local-holder.js";
import { recordedCgroup } from "./local-launch.js";
import {
  isProcessAlive,
  type ProcessFinder,
  type ProcStat,
  pidNamespaceMembers,
  readProcStat,
  SANDBOX_TAG_VARIABLE,
  sendSignal,
  signalTree,
  taggedProcesses,
} from "./local-procfs.js";
import {
  type LocalSandboxPaths,
  type LocalSandboxRecord,
  pathsIn,
  readRecord,
  updateRecord,
} from "./local-state.js";

/** Host processes carrying the sandbox's tag: its launchers, and without isolation its commands. */
const taggedOnHost = (target: CommandTarget): ProcessFinder =>
  taggedProcesses({ name: SANDBOX_TAG_VARIABLE, value: target.id });

/**
 * Every process of a running sandbox: the kernel's list of its cgroup when it has one, else the members of
 * its PID namespace, else (without isolation) the host processes carrying its tag.
 */
export async function sandboxProcesses(target: CommandTarget): Promise<ProcStat[]> {
  const holder = await liveHolder(target);
  if (holder) return pidNamespaceMembers(holder.pidNamespace);
  return taggedOnHost(target)();
}

/**
 * Kills every process of the sandbox (foreground, background, pty, and whatever they started) and resolves
 * only once none is left: the cgroup is killed as a whole, the PID namespace's init is killed (the kernel then
 * ends everything in the namespace), and the host-side launchers are killed by their tag. Any process that
 * survives, or any lookup that fails, rejects instead.
 */
export async function killAllProcesses(target: CommandTarget): Promise<void> {
  await markAllKilled(target, "SIGKILL");
  const cgroup = recordedCgroup(target);
  if (cgroup) await killSandboxGroup(cgroup);
  await stopHolder(target);
  const left = await signalTree(taggedOnHost(target), "SIGKILL");
  if (left > 0) {
    throw localError("Provider", `${left} processes of local sandbox ${target.id} survived SIGKILL`);
  }
}

/**
 * Stops the sandbox: every process is killed, every file kept. It is recorded as stopped first, so that no
 * new command starts while it is being stopped. Stopping a stopped sandbox changes nothing.
 */
export async function stopSandbox(target: CommandTarget): Promise<LocalSandboxRecord> {
  const record = await updateRecord(target.paths, target.id, (current) => ({ ...current, state: "stopped" }));
  await killAllProcesses(target);
  // Unprivileged, the disk is a daemon's (fuse2fs): it ends with the sandbox's processes, its files kept.
  if (record.disk === "fuse") await detachFuseDisk(target.paths);
  return record;
}

/**
 * Signals every process of the sandbox with SIGSTOP or SIGCONT; two passes catch one forked meanwhile. The
 * launchers (`spare`: bubblewrap's monitors, nsenter) are not stopped: they run no sandbox code, and nsenter
 * stops itself when the child it waits for stops, which would leave it stopped outside the sandbox, unable
 * to reap that child. SIGCONT goes to them too, in case one was stopped.
 */
async function signalAll(
  target: CommandTarget,
  signal: "SIGSTOP" | "SIGCONT",
  spare: readonly string[],
): Promise<void> {
  const holder = await liveHolder(target);
  const find: ProcessFinder = holder ? () => pidNamespaceMembers(holder.pidNamespace) : taggedOnHost(target);
  const spared = new Set(signal === "SIGSTOP" ? spare : []);
  for (let pass = 0; pass < 2; pass++) {
    for (const proc of await find()) {
      if (spared.size > 0 && spared.has(await readlink(`/proc/${proc.pid}/exe`).catch(() => ""))) continue;
      sendSignal(proc.pid, signal);
    }
  }
  if (signal === "SIGCONT" && holder)
    for (const proc of await taggedOnHost(target)()) sendSignal(proc.pid, signal);
}

/**
 * Freezes every process of the sandbox: with a cgroup, the kernel's freezer (atomic, invisible to the
 * processes); otherwise SIGSTOP to every member of its PID namespace, twice, so that a process forked while the
 * first pass ran is stopped too (a stopped process cannot fork).
 */
export async function pauseSandbox(
  target: CommandTarget,
  spare: readonly string[] = [],
): Promise<LocalSandboxRecord> {
  if (target.record.state === "stopped") {
    throw localError("InvalidState", `local sandbox ${target.id} is stopped; resume it before pausing`);
  }
  const record = await updateRecord(target.paths, target.id, (r) => ({ ...r, state: "paused" }));
  const cgroup = recordedCgroup(target);
  if (cgroup && canFreeze(cgroup)) await freezeSandbox(cgroup, true);
  else await signalAll(target, "SIGSTOP", spare);
  return record;
}

/** Brings a stopped or paused sandbox back; a paused one continues where it was. */
export async function resumeSandbox(target: CommandTarget): Promise<LocalSandboxRecord> {
  if (target.record.state === "paused") {
    const cgroup = recordedCgroup(target);
    if (cgroup && canFreeze(cgroup)) await freezeSandbox(cgroup, false);
    else await signalAll(target, "SIGCONT", []);
  }
  return updateRecord(target.paths, target.id, (record) => ({ ...record, state: "running" }));
}

/** True when the sandbox's time to live has passed. */
export function isExpired(record: LocalSandboxRecord, now: number = Date.now()): boolean {
  return record.expiresAt !== undefined && Date.parse(record.expiresAt) <= now;
}

/**
 * Destroys a sandbox. Its directory is first renamed to a hidden name in the state root (not a valid id), so
 * it disappears at once for every program: no new command can start in it while it is being destroyed, and
 * one already starting finds its namespaces gone. Then every process is killed (see `killAllProcesses`), its
 * cgroup removed and its files deleted. When a process survives, the directory is put back, so that the
 * sandbox can still be found and destroyed again.
 */
export async function destroySandbox(target: CommandTarget): Promise<void> {
  const trash = join(dirname(target.paths.dir), await trashName());
  try {
    await rename(target.paths.dir, trash);
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return;
    throw error;
  }
  const moved: CommandTarget = { ...target, paths: pathsIn(trash) };
  try {
    await killAllProcesses(moved);
    const cgroup = recordedCgroup(moved);
    if (cgroup) await removeSandboxCgroup(cgroup);
    // Its disk image's mounts go before its files (the image is one of them).
    await unmountBelow(trash);
  } catch (error) {
    await rename(trash, target.paths.dir).catch(() => {});
    throw error;
  }
  await removeTree(trash);
  await releaseStateRootIfIdle(dirname(target.paths.dir));
}

/** Removes the directory of a sandbox that never ran anything (a fork that failed half way). */
export async function removeSandboxDirectory(paths: LocalSandboxPaths): Promise<void> {
  const trash = join(dirname(paths.dir), await trashName());
  try {
    await rename(paths.dir, trash);
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return;
    throw error;
  }
  await unmountBelow(trash);
  await removeTree(trash);
  await releaseStateRootIfIdle(dirname(paths.dir));
}

let selfStart: Promise<number | undefined> | undefined;

/**
 * A name for a directory being destroyed: hidden (not a valid id), and naming the program destroying it
 * (pid and start time), so that one left behind by a program that died half way can be told from one being
 * destroyed right now, and finished (see `finishAbandonedDestroys`).
 */
async function trashName(): Promise<string> {
  selfStart ??= readProcStat(process.pid).then((stat) => stat?.startTime);
  const start = await selfStart;
  return `.trash-${process.pid}-${start ?? 0}-${randomBytes(6).toString("hex")}`;
}

const TRASH_NAME = /^\.trash-(\d+)-(\d+)-[0-9a-f]+$/;

/**
 * Finishes the destruction of sandboxes whose destroying program died after hiding their directory: their
 * processes would otherwise run on with no record left to find them by. Best effort: what fails is tried
 * again on the next call.
 */
export async function finishAbandonedDestroys(root: string, names: readonly string[]): Promise<void> {
  for (const name of names) {
    const match = TRASH_NAME.exec(name);
    if (!match) continue;
    if (await isProcessAlive(Number(match[1]), Number(match[2]))) continue;
    const paths = pathsIn(join(root, name));
    try {
      let id: unknown;
      try {
        id = (JSON.parse(await readFile(paths.record, "utf8")) as { id?: unknown }).id;
      } catch {
        id = undefined;
      }
      if (typeof id === "string") {
        const target: CommandTarget = { id, paths, record: await readRecord(paths, id) };
        await killAllProcesses(target);
        const cgroup = recordedCgroup(target);
        if (cgroup) await removeSandboxCgroup(cgroup);
      }
      await unmountBelow(paths.dir);
      await removeTree(paths.dir);
    } catch {
      // left for the next call
    }
  }
}

/** `rm -rf` that also gets through directories a sandbox made unreadable (mode 000). */
async function removeTree(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true, maxRetries: 2 });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== "EACCES" && code !== "EPERM") throw error;
    await makeWritable(path);
    await rm(path, { recursive: true, force: true, maxRetries: 2 });
  }
}

async function makeWritable(dir: string): Promise<void> {
  await chmod(dir, 0o700).catch(() => {});
  let entries: import("node:fs").Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) if (entry.isDirectory()) await makeWritable(join(dir, entry.name));
}
