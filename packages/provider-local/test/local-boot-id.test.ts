/**
 * A sandbox's boot id (`/proc/sys/kernel/random/boot_id`) is its own: the host's identifies the host's boot,
 * and a VM's (E2B's, Fly's) changes with each boot of the VM. Each sandbox gets one, kept while it runs and
 * across a pause (its processes are frozen, not rebooted), new after a stop (the next start is a new boot),
 * and read-only inside.
 */
import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { call, destroyAll, providerFor, run, tempStateRoot } from "./helpers.js";

const state = tempStateRoot("boot-id");
afterAll(() => state.cleanup());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("boot id (bubblewrap)", () => {
  const provider = providerFor("bwrap", `${state.home}/bwrap`);
  afterAll(() => destroyAll(provider));

  it("is the sandbox's own, kept across a pause, new after a stop, and cannot be written", async () => {
    const host = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    const bootId = async (sandbox: Parameters<typeof run>[1]) =>
      (await run(provider, sandbox, "cat /proc/sys/kernel/random/boot_id")).stdout.trim();
    const first = await provider.doCreate({}, call());
    const second = await provider.doCreate({}, call());

    const booted = await bootId(first);
    expect(booted).toMatch(UUID);
    expect(booted).not.toBe(host);
    expect(await bootId(first)).toBe(booted);
    expect(await bootId(second)).not.toBe(booted);

    const write = await run(
      provider,
      first,
      "echo 00000000-0000-0000-0000-000000000000 > /proc/sys/kernel/random/boot_id",
    );
    expect(write.exitCode).not.toBe(0);
    expect(await bootId(first)).toBe(booted);

    await provider.doPause!(first, call());
    await provider.doResume!(first, call());
    expect(await bootId(first)).toBe(booted);

    await provider.doStop!(first, call());
    await provider.doResume!(first, call());
    const rebooted = await bootId(first);
    expect(rebooted).toMatch(UUID);
    expect(rebooted).not.toBe(booted);
    expect(rebooted).not.toBe(host);
    expect(readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()).toBe(host);
  });
});
