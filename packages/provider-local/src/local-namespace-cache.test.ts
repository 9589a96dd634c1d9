import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { NamespaceCache } from "./local-namespace-cache.js";

// A plain `sleep` stands in for a sandbox's namespace holder: any process has a /proc/<pid>/ns/pid.
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

async function holder(): Promise<{ pid: number; startTime: number; child: ChildProcess }> {
  const child = spawn("sleep", ["300"], { stdio: "ignore" });
  children.push(child);
  await new Promise((resolve) => child.once("spawn", resolve));
  const stat = readFileSync(`/proc/${child.pid}/stat`, "utf8");
  const startTime = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
  return { pid: child.pid as number, startTime, child };
}

async function killed(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

const openFds = () => readdirSync("/proc/self/fd").length;

describe("NamespaceCache", () => {
  it("lends a descriptor of the holder's PID namespace and keeps it for the next command", async () => {
    const cache = new NamespaceCache();
    const { pid, startTime } = await holder();
    const first = cache.adopt("a", pid, startTime);
    expect(first).toBeDefined();
    expect(readlinkSync(`/proc/self/fd/${first?.fd}`)).toBe(readlinkSync(`/proc/${pid}/ns/pid`));
    first?.release();
    const again = cache.lease("a");
    expect(again?.fd).toBe(first?.fd);
    again?.release();
    cache.clear();
  });

  it("refuses a pid whose start time differs (the pid was reused by another process)", async () => {
    const cache = new NamespaceCache();
    const { pid, startTime } = await holder();
    const before = openFds();
    expect(cache.adopt("a", pid, startTime + 1)).toBeUndefined();
    expect(cache.size).toBe(0);
    expect(openFds()).toBe(before);
  });

  it("never lends the namespace of a holder that has died, and lets its descriptors go", async () => {
    const cache = new NamespaceCache();
    const { pid, startTime, child } = await holder();
    const before = openFds();
    cache.adopt("a", pid, startTime)?.release();
    expect(openFds()).toBe(before + 2);
    await killed(child);
    expect(cache.lease("a")).toBeUndefined();
    expect(cache.size).toBe(0);
    expect(openFds()).toBe(before);
  });

  it("closes a forgotten entry only when its last lease is released", async () => {
    const cache = new NamespaceCache();
    const { pid, startTime } = await holder();
    const before = openFds();
    const lease = cache.adopt("a", pid, startTime);
    cache.forget("a");
    expect(openFds()).toBe(before + 2);
    expect(readlinkSync(`/proc/self/fd/${lease?.fd}`)).toMatch(/^pid:/);
    lease?.release();
    lease?.release(); // a second release changes nothing
    expect(openFds()).toBe(before);
  });

  it("keeps at most `limit` sandboxes, letting the least recently used go first", async () => {
    const cache = new NamespaceCache(2);
    const holders = await Promise.all([holder(), holder(), holder()]);
    const before = openFds();
    cache.adopt("a", holders[0].pid, holders[0].startTime)?.release();
    cache.adopt("b", holders[1].pid, holders[1].startTime)?.release();
    cache.lease("a")?.release(); // "b" is now the least recently used
    cache.adopt("c", holders[2].pid, holders[2].startTime)?.release();
    expect(cache.size).toBe(2);
    expect(cache.lease("b")).toBeUndefined();
    const a = cache.lease("a");
    expect(a).toBeDefined();
    a?.release();
    expect(openFds()).toBe(before + 4);
    cache.clear();
    expect(openFds()).toBe(before);
  });
});
