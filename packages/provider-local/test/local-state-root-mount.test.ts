/**
 * As root, a state root is bound onto itself (a private mount) while sandboxes with disk images live below
 * it; once the last is destroyed nothing of sbox stays mounted, so the user can remove the directory (a mount
 * point cannot be removed: EBUSY broke every suite that removes its state root). Plain `rmSync` on purpose:
 * the helpers' removeTestDir unmounts what it finds, which would hide exactly this.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSandboxClient } from "@sbox/core";
import { describe, expect, it } from "vitest";
import { local } from "../src/index.js";

const isRoot = process.getuid?.() === 0;

function mountedAtOrBelow(dir: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point === dir || point.startsWith(`${dir}/`));
}

describe.skipIf(!isRoot)("the state root's private mount (root host)", () => {
  it("is gone once the last sandbox is destroyed, and the root is an ordinary directory again", async () => {
    const home = mkdtempSync(join(tmpdir(), "sbox-local-rootmount-"));
    const root = join(home, "local");
    const client = createSandboxClient({ provider: local({ root, isolation: "bwrap" }) });
    try {
      const first = await client.create({});
      const second = await client.create({});
      expect(mountedAtOrBelow(root)).toContain(root);
      expect((await first.commands.run("echo hi > /workspace/f && cat /workspace/f")).stdout).toBe("hi\n");
      await first.destroy();
      // Another sandbox still has its disk below: the root stays a private mount.
      expect(mountedAtOrBelow(root)).toContain(root);
      await second.destroy();
      expect(mountedAtOrBelow(root)).toEqual([]);
      // And a new sandbox binds it again.
      const third = await client.create({});
      expect(mountedAtOrBelow(root)).toContain(root);
      await third.destroy();
      expect(mountedAtOrBelow(root)).toEqual([]);
    } finally {
      await client.dispose();
      rmSync(home, { recursive: true, force: true });
    }
    expect(mountedAtOrBelow(home)).toEqual([]);
  }, 120_000);
});
