/**
 * The holder lock against destroy's rename: destroy hides a sandbox's directory by renaming it first, whoever
 * holds its lock. The lock was released by path, so a lock held across the rename was never removed (the path
 * pointed nowhere any more): destroy then waited for it until it timed out, put the directory back with the
 * stale lock in it, and every later start of that sandbox waited for the lock too. The lock is released
 * through a descriptor of its directory now, and an owner that is gone no longer blocks anyone.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { withHolderLock } from "../src/local-holder.js";
import { withLock } from "../src/local-lock.js";
import { pathsIn, readRecord } from "../src/local-state.js";
import { call, providerFor, run, tempStateRoot } from "./helpers.js";

const state = tempStateRoot("lock");
afterAll(() => state.cleanup());

describe("the holder lock", () => {
  it("held while destroy renames the sandbox away: destroy finishes, nothing is left", async () => {
    const root = join(state.home, "destroy");
    const provider = providerFor("bwrap", root);
    const sandbox = await provider.doCreate({}, call());
    expect((await run(provider, sandbox, "echo up")).stdout).toBe("up\n");
    const paths = pathsIn(sandbox.native.dir);
    const target = { id: sandbox.id, paths, record: await readRecord(paths, sandbox.id) };
    let destroyed: Promise<void> | undefined;
    const started = Date.now();
    await withHolderLock(target, async () => {
      // destroy starts while the lock is held, and renames the directory before it waits for the lock.
      destroyed = provider.doDestroy(sandbox, call());
      for (let i = 0; i < 500 && existsSync(paths.dir); i++) await new Promise((r) => setTimeout(r, 10));
      expect(existsSync(paths.dir), "destroy hid the directory").toBe(false);
      await new Promise((r) => setTimeout(r, 200));
    });
    await destroyed;
    expect(Date.now() - started, "destroy did not wait for a lock nobody holds").toBeLessThan(8_000);
    const left = readdirSync(root).filter((name) => !name.startsWith(".seccomp-"));
    expect(left, "no sandbox directory, trash or lock left").toEqual([]);
  }, 60_000);

  it("a lock whose owner is gone is taken over at once; one of a live owner is waited for, bounded", async () => {
    const dir = join(state.home, "locks");
    mkdirSync(dir, { recursive: true });
    const lock = join(dir, "holder.lock");
    mkdirSync(lock);
    // pid 1's start time is never this: the owner named in the lock is no process that runs.
    writeFileSync(join(lock, "owner"), "1 999999999999");
    const started = Date.now();
    expect(await withLock(lock, async () => "taken", 5_000)).toBe("taken");
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(existsSync(lock)).toBe(false);

    // Held by this (live) program: another waiter gives up after its bound, with a Timeout naming the lock.
    let release: () => void = () => {};
    const held = withLock(lock, () => new Promise<void>((resolve) => (release = resolve)));
    await new Promise((r) => setTimeout(r, 50));
    await expect(withLock(lock, async () => "second", 300)).rejects.toMatchObject({
      code: "Timeout",
      message: expect.stringContaining("holder.lock"),
    });
    release();
    await held;
    expect(await withLock(lock, async () => "after", 1_000)).toBe("after");
  });
});
