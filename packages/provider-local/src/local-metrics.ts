import { lstat, readdir, readFile } from "node:fs/promises";
import type { SandboxMetrics } from "@sbox/core/spec";
import { findTaggedProcesses, SANDBOX_TAG_VARIABLE } from "./local-procfs.js";

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

/** Disk use of a tree in bytes (allocated blocks, like `du`), symlinks not followed. */
export async function diskUsage(dir: string): Promise<number> {
  let total = 0;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    const path = `${dir}/${name}`;
    try {
      const stats = await lstat(path);
      total += stats.blocks * 512;
      if (stats.isDirectory()) total += await diskUsage(path);
    } catch {
      // removed meanwhile
    }
  }
  return total;
}

/**
 * Resource use of a sandbox from `/proc`: the resident memory of all its processes, their CPU use over a
 * short sampling window (percent of one CPU), and the disk used by its directory. No memory limit exists
 * without cgroups, so `memoryLimitBytes` is not reported.
 */
export async function sandboxMetrics(
  sandboxId: string,
  sandboxDir: string,
  signal: AbortSignal,
): Promise<SandboxMetrics> {
  const first = await findTaggedProcesses(SANDBOX_TAG_VARIABLE, sandboxId);
  const started = performance.now();
  const ticksBefore = new Map(first.map((proc) => [`${proc.pid}:${proc.startTime}`, proc.cpuTicks]));
  const diskPromise = diskUsage(sandboxDir);
  if (first.length > 0) {
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, SAMPLE_MS);
      signal.addEventListener("abort", done, { once: true });
    });
  }
  const second = first.length > 0 ? await findTaggedProcesses(SANDBOX_TAG_VARIABLE, sandboxId) : [];
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
