import { lstat, readdir, readFile, statfs } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxMetrics } from "@sbox/core/spec";
import { cgroupUsage } from "./local-cgroups.js";
import type { CommandTarget } from "./local-command.js";
import { at, closeQuietly, DIRECTORY_FLAGS, openDirectory, openFd } from "./local-fd-paths.js";
import { recordedCgroup } from "./local-launch.js";
import { sandboxProcesses } from "./local-lifecycle.js";

/** Linux reports CPU times in USER_HZ, which is 100 on every mainstream architecture. */
const CLOCK_TICKS_PER_SECOND = 100;
const SAMPLE_MS = 200;

async function rssBytes(pid: number): Promise<number> {
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** What a sandbox with a disk image has at the top of its directory for it (its use is the image's). */
const IMAGE_NAMES: ReadonlySet<string> = new Set(["disk", "disk.img", "workspace", "tmp", "home"]);

/**
 * Disk use of a sandbox: its directory's; with a disk image, what the image's file system has in use (written
 * data reaches the image file itself only later) plus the rest of the directory.
 */
async function sandboxDiskUse(target: CommandTarget): Promise<number> {
  if (target.record.disk === undefined) return diskUsage(target.paths.dir);
  const [fs, rest] = await Promise.all([
    statfs(target.paths.workspace).catch(() => undefined),
    diskUsage(target.paths.dir, IMAGE_NAMES),
  ]);
  if (fs) return rest + (fs.blocks - fs.bfree) * fs.bsize;
  // Not mounted (a stopped sandbox's FUSE disk): what its image file takes on the host's disk.
  const image = await lstat(join(target.paths.dir, "disk.img")).catch(() => undefined);
  return rest + (image ? image.blocks * 512 : 0);
}

/**
 * Disk use of the tree inside the directory open as `dir`, in bytes (allocated blocks, like `du`); walked by
 * descriptor, never through a symlink, so a sandbox swapping directories cannot make it count a host tree.
 */
async function diskUsageAt(dir: number, skip?: ReadonlySet<string>): Promise<number> {
  let total = 0;
  let names: string[];
  try {
    names = await readdir(at(dir));
  } catch {
    return 0;
  }
  for (const name of names) {
    if (skip?.has(name)) continue;
    try {
      const stats = await lstat(at(dir, name));
      total += stats.blocks * 512;
      if (!stats.isDirectory()) continue;
      const child = await openFd(at(dir, name), DIRECTORY_FLAGS);
      try {
        total += await diskUsageAt(child);
      } finally {
        await closeQuietly(child);
      }
    } catch {
      // removed or replaced meanwhile
    }
  }
  return total;
}

/**
 * Disk use of a sandbox directory in bytes. `skip`: top-level names not to walk (a sandbox with a disk image
 * counts the image's blocks once, not the mounted file system and its binds again).
 */
export async function diskUsage(path: string, skip?: ReadonlySet<string>): Promise<number> {
  let dir: number;
  try {
    dir = await openDirectory(path);
  } catch {
    return 0;
  }
  try {
    return await diskUsageAt(dir, skip);
  } finally {
    await closeQuietly(dir);
  }
}

function sampleWindow(signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, SAMPLE_MS);
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * Resource use of a sandbox: with a cgroup, the kernel's accounting (memory in use and its limit, CPU time
 * over a short window); otherwise from `/proc`: the resident memory of all its processes and their CPU time
 * over the window. Disk is what its directory uses. CPU is percent of one CPU.
 */
export async function sandboxMetrics(target: CommandTarget, signal: AbortSignal): Promise<SandboxMetrics> {
  const cgroup = recordedCgroup(target);
  const diskPromise = sandboxDiskUse(target);
  if (cgroup) {
    const before = await cgroupUsage(cgroup);
    const started = performance.now();
    await sampleWindow(signal);
    const after = await cgroupUsage(cgroup);
    const seconds = (performance.now() - started) / 1000;
    const used = (after.cpuNanoseconds ?? 0) - (before.cpuNanoseconds ?? 0);
    return {
      cpuPercent: seconds > 0 ? (used / 1e9 / seconds) * 100 : 0,
      memoryBytes: after.memoryBytes ?? 0,
      ...(after.memoryLimitBytes === undefined ? {} : { memoryLimitBytes: after.memoryLimitBytes }),
      diskBytes: await diskPromise,
      at: new Date(),
    };
  }
  return processMetrics(target, signal, diskPromise);
}

async function processMetrics(
  target: CommandTarget,
  signal: AbortSignal,
  diskPromise: Promise<number>,
): Promise<SandboxMetrics> {
  const first = await sandboxProcesses(target);
  const started = performance.now();
  const ticksBefore = new Map(first.map((proc) => [`${proc.pid}:${proc.startTime}`, proc.cpuTicks]));
  if (first.length > 0) await sampleWindow(signal);
  const second = first.length > 0 ? await sandboxProcesses(target) : [];
  const elapsedSeconds = (performance.now() - started) / 1000;
  let ticks = 0;
  // A process missing from the first sample started during the window: all its CPU time falls inside it.
  for (const proc of second) ticks += proc.cpuTicks - (ticksBefore.get(`${proc.pid}:${proc.startTime}`) ?? 0);
  const memory = await Promise.all(second.map((proc) => rssBytes(proc.pid)));
  return {
    cpuPercent:
      elapsedSeconds > 0 && second.length > 0 ? (ticks / CLOCK_TICKS_PER_SECOND / elapsedSeconds) * 100 : 0,
    memoryBytes: memory.reduce((sum, bytes) => sum + bytes, 0),
    diskBytes: await diskPromise,
    at: new Date(),
  };
}
