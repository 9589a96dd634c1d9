/**
 * Finding 8 of issue #12: destroying many sandboxes at once left their processes running while `destroy()`
 * resolved. 120 sandboxes, each with its namespace holder and a background process, are destroyed (and
 * stopped, and paused) in parallel by a host program limited to 1024 open files; then `/proc` is scanned:
 * nothing of them may be left (or, paused, left running).
 */
import { readdirSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleChild, tempOutsideTmp } from "./helpers.js";

const COUNT = 120;
const { dir: home, cleanup } = tempOutsideTmp("many");
let many: Awaited<ReturnType<typeof bundleChild>>;
beforeAll(async () => {
  many = await bundleChild(home, "local-many", { openFiles: 1024 });
});
afterAll(() => cleanup());

/**
 * Live processes (not zombies) whose command line or environment names `needle`, with their state; with
 * `exact`, only those whose command line is exactly that argv.
 */
function processesWith(needle: string, exact?: string[]): { pid: number; state: string }[] {
  const found: { pid: number; state: string }[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (state === "Z" || state === "X") continue;
      let environ = "";
      try {
        environ = readFileSync(`/proc/${name}/environ`, "latin1");
      } catch {
        // another user's, or a process this test may not read: the command line still tells
      }
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "latin1");
      if (exact) {
        if (cmdline === `${exact.join("\0")}\0`) found.push({ pid: Number(name), state });
      } else if (cmdline.includes(needle) || environ.includes(needle))
        found.push({ pid: Number(name), state });
    } catch {
      // gone
    }
  }
  return found;
}

describe("many sandboxes at once, from a program limited to 1024 open files", () => {
  const marker = () => `${30000 + Math.floor(Math.random() * 9999)}.5`;

  async function create(root: string, mark: string): Promise<string[]> {
    const created = await many(root, "create", String(COUNT), mark);
    expect(created.error, String(created.stack)).toBeUndefined();
    const ids = created.ids as string[];
    expect(ids).toHaveLength(COUNT);
    expect(processesWith(mark).length).toBeGreaterThanOrEqual(COUNT);
    return ids;
  }

  /** Processes of any of the sandboxes: their background commands, holders and launchers (tagged with the id). */
  const leftovers = (ids: string[], mark: string) => [
    ...processesWith(mark),
    ...ids.flatMap((id) => processesWith(`SBOX_LOCAL_SANDBOX=${id}`)),
  ];

  it(`destroying ${COUNT} sandboxes in parallel leaves no process behind`, async () => {
    const mark = marker();
    const root = `${home}/destroy`;
    const ids = await create(root, mark);
    const destroyed = await many(root, "destroy");
    expect(destroyed.errors).toEqual([]);
    expect(leftovers(ids, mark)).toEqual([]);
    expect(readdirSync(root).filter((name) => !name.startsWith("."))).toEqual([]);
  }, 600_000);

  it(`stopping ${COUNT} sandboxes in parallel leaves no process behind`, async () => {
    const mark = marker();
    const root = `${home}/stop`;
    const ids = await create(root, mark);
    const stopped = await many(root, "stop");
    expect(stopped.errors).toEqual([]);
    expect(leftovers(ids, mark)).toEqual([]);
    expect((await many(root, "destroy")).errors).toEqual([]);
  }, 600_000);

  it(`pausing ${COUNT} sandboxes in parallel freezes every process of them`, async () => {
    const mark = marker();
    const root = `${home}/pause`;
    const ids = await create(root, mark);
    try {
      const paused = await many(root, "pause");
      expect(paused.errors).toEqual([]);
      // The sandboxed commands themselves (not the provider's launchers on the host, which only wait): frozen
      // by the cgroup freezer (their state may read S or D, the freezer says FROZEN) or stopped (T).
      const commands = processesWith(mark, ["sleep", mark]);
      expect(commands).toHaveLength(COUNT);
      const running = commands.filter(({ pid, state }) => {
        if (state === "T" || state === "t") return false;
        try {
          return !readFileSync(`/proc/${pid}/cgroup`, "utf8")
            .split("\n")
            .filter((line) => line.includes(":freezer:"))
            .some((line) => {
              const path = line.split(":")[2];
              return readFileSync(`/sys/fs/cgroup/freezer${path}/freezer.state`, "utf8").trim() === "FROZEN";
            });
        } catch {
          return true;
        }
      });
      expect(running).toEqual([]);
      expect((await many(root, "resume")).errors).toEqual([]);
    } finally {
      expect((await many(root, "destroy")).errors).toEqual([]);
    }
    expect(leftovers(ids, mark)).toEqual([]);
  }, 600_000);
});
