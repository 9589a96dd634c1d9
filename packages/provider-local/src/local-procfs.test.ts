/**
 * signalTree signals a parent before its children, whatever order the finder returns them in: a shell in
 * `wait` whose children die of the signal first would otherwise end with 0 and report a killed command as a
 * success (seen in CI, where pids wrap at 32768 and the finder's parallel reads return in any order).
 * Only processes this test starts are signalled.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { type ProcStat, readProcStat, signalTree } from "./local-procfs.js";

/** The live processes whose parent is `pid`, read from /proc (the test's own tree only). */
async function childrenOf(pid: number): Promise<ProcStat[]> {
  const { readdir } = await import("node:fs/promises");
  const found: ProcStat[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readProcStat(Number(name));
    if (stat && stat.ppid === pid && stat.state !== "Z") found.push(stat);
  }
  return found;
}

describe("signalTree", () => {
  it("signals the oldest ancestor first, so a waiting shell dies of the signal instead of exiting 0", async () => {
    for (let round = 0; round < 5; round++) {
      const shell = spawn("sh", ["-c", "sleep 30 & sleep 30 & wait; exit 0"], { stdio: "ignore" });
      const pid = shell.pid!;
      let children: ProcStat[] = [];
      for (let i = 0; i < 100 && children.length < 2; i++) {
        children = await childrenOf(pid);
        if (children.length < 2) await sleep(20);
      }
      expect(children).toHaveLength(2);
      const parent = (await readProcStat(pid))!;
      // Children first, the parent last: the order that lost the parent's signal.
      const exited = once(shell, "exit");
      await signalTree(async () => [...children, parent], "SIGTERM");
      const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
      expect({ code, signal }).toEqual({ code: null, signal: "SIGTERM" });
    }
  });
});
