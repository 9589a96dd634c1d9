/**
 * One sandbox cannot take the host down (finding 5 of issue #12): a fork bomb, a 4 GB allocation and a 2 GB
 * write are each contained by the sandbox's default limits. Each test first checks, from inside the sandbox
 * and from the kernel's own files, that the limit it relies on is in force, and fails WITHOUT starting the
 * attack when it is not: a test machine must never be the victim.
 */
import { readdirSync, readFileSync } from "node:fs";
import type { DriverSandbox } from "@sbox/core/spec";
import { SandboxError } from "@sbox/core/spec";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalSandboxHandle, local } from "../src/index.js";
import { type AnyLocalProvider, call, destroyAll, eventually, run, tempStateRoot } from "./helpers.js";

const state = tempStateRoot("containment");
afterAll(() => state.cleanup());

interface Limits {
  mechanism: string;
  pids: number;
  memoryMB: number;
  diskMB: number;
  cgroup?: { kind: string; dirs?: Record<string, string>; dir?: string };
  kernel?: { pids?: number; memoryBytes?: number };
}

/** The limits `/proc/self/limits` shows inside the sandbox, in their units (bytes, processes). */
async function limitsInside(provider: AnyLocalProvider, sandbox: DriverSandbox<LocalSandboxHandle>) {
  const { stdout } = await run(provider, sandbox, "cat /proc/self/limits; cat /proc/self/cgroup");
  const value = (label: string) => {
    const match = new RegExp(`^${label}\\s+(\\S+)\\s+(\\S+)`, "m").exec(stdout);
    return match?.[2] === "unlimited" ? Number.POSITIVE_INFINITY : Number(match?.[2]);
  };
  return {
    processes: value("Max processes"),
    data: value("Max data size"),
    fileSize: value("Max file size"),
    cgroups: stdout,
  };
}

function hostProcessCount(): number {
  return readdirSync("/proc").filter((name) => /^\d+$/.test(name)).length;
}

/** Samples the host's process count and this event loop's worst delay while `work` runs. */
async function watchHost<T>(
  work: () => Promise<T>,
): Promise<{ result: T | unknown; maxProcesses: number; maxLagMs: number }> {
  let maxProcesses = hostProcessCount();
  let maxLagMs = 0;
  let last = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    maxLagMs = Math.max(maxLagMs, now - last - 100);
    last = now;
    maxProcesses = Math.max(maxProcesses, hostProcessCount());
  }, 100);
  try {
    const result = await work().catch((error: unknown) => error);
    return { result, maxProcesses, maxLagMs };
  } finally {
    clearInterval(timer);
  }
}

describe("containment (bubblewrap, default limits)", () => {
  let provider: AnyLocalProvider;
  let sandbox: DriverSandbox<LocalSandboxHandle>;
  let limits: Limits;

  beforeAll(async () => {
    provider = local({ root: `${state.home}/main`, isolation: "bwrap" });
    sandbox = await provider.doCreate({}, call());
    limits = ((await provider.doGetInfo(sandbox, call())).raw as { limits: Limits }).limits;
  });
  afterAll(async () => {
    await destroyAll(provider);
  });

  /** Fails the test (without running anything harmful) unless the process limit is really in force. */
  async function requireProcessLimit(): Promise<number> {
    expect(limits.pids, "a default process limit").toBeLessThanOrEqual(4096);
    const inside = await limitsInside(provider, sandbox);
    if (limits.mechanism.startsWith("cgroup")) {
      expect(limits.kernel?.pids, "pids.max as the kernel has it").toBe(limits.pids);
      // The command is in the sandbox's group, where the limit is.
      expect(inside.cgroups).toContain(sandbox.id);
    } else {
      expect(inside.processes, "RLIMIT_NPROC inside the sandbox").toBeLessThanOrEqual(limits.pids);
    }
    return limits.pids;
  }

  it("a fork bomb stays within the sandbox's process limit and ends within its time limit, and the sandbox works on", async () => {
    const limit = await requireProcessLimit();
    const before = hostProcessCount();
    const started = Date.now();
    const watched = await watchHost(() =>
      provider.doExec(sandbox, {
        // The bomb, then a wait for it: only the time limit ends this command.
        command: { argv: ["bash", "-c", ":(){ :|:& };:; wait"] },
        // The run's time limit (the client's timeoutMs arrives at the driver as this signal).
        signal: AbortSignal.timeout(8_000),
      }),
    );
    const elapsed = Date.now() - started;
    // Ended within its time limit: by the limit (the driver sees the signal fire and rejects once the tree
    // is gone), or earlier, when the bomb ran out of processes and died down.
    if (SandboxError.isInstance(watched.result))
      expect(["Aborted", "Timeout"]).toContain(watched.result.code);
    expect(elapsed).toBeLessThan(30_000);
    expect(watched.maxProcesses).toBeLessThan(before + limit + 200);
    console.log(
      `fork bomb: ${elapsed} ms, host processes ${before} -> at most ${watched.maxProcesses} (limit ${limit}), worst event loop delay ${watched.maxLagMs} ms`,
    );
    // This process kept running its event loop (a shared 2-core machine: generous, but not a stall).
    expect(watched.maxLagMs).toBeLessThan(5_000);
    // The next command runs, at the latest once the last of the bomb's processes have been reaped (with
    // rlimits they count against the sandbox's process limit until then).
    expect(
      await eventually(
        async () => (await run(provider, sandbox, "echo alive").catch(() => undefined))?.stdout === "alive\n",
        10_000,
      ),
    ).toBe(true);
    // Nothing of the bomb is left: the sandbox holds only its holder (and this check's own processes).
    expect(Number((await run(provider, sandbox, "ls /proc | grep -c '^[0-9]'")).stdout)).toBeLessThan(10);
  }, 120_000);

  it("a 4 GB allocation fails or is killed, and the sandbox works on", async () => {
    expect(limits.memoryMB, "a default memory limit below 4 GB").toBeLessThan(4096);
    const inside = await limitsInside(provider, sandbox);
    if (limits.mechanism.startsWith("cgroup")) {
      expect(limits.kernel?.memoryBytes, "the memory limit as the kernel has it").toBe(
        limits.memoryMB * 1024 * 1024,
      );
      expect(inside.cgroups).toContain(sandbox.id);
    } else {
      expect(inside.data, "RLIMIT_DATA inside the sandbox").toBeLessThanOrEqual(
        limits.memoryMB * 1024 * 1024,
      );
    }
    const watched = await watchHost(() =>
      provider.doExec(sandbox, {
        command: { argv: ["python3", "-c", "b = bytearray(4 * 1024 ** 3); print('allocated', len(b))"] },
        signal: AbortSignal.timeout(60_000),
      }),
    );
    const result = watched.result as { exitCode?: number; stdout?: Uint8Array };
    expect(SandboxError.isInstance(watched.result)).toBe(false);
    expect(result.exitCode).not.toBe(0);
    expect(Buffer.from(result.stdout ?? new Uint8Array()).toString()).not.toContain("allocated");
    expect(watched.maxLagMs).toBeLessThan(5_000);
    expect((await run(provider, sandbox, "echo alive")).stdout).toBe("alive\n");
  }, 120_000);

  it("a 2 GB write stops at the size limit, and the sandbox works on", async () => {
    expect(limits.diskMB, "a default size limit below 2 GB").toBeLessThan(2048);
    const inside = await limitsInside(provider, sandbox);
    expect(inside.fileSize, "RLIMIT_FSIZE inside the sandbox").toBe(limits.diskMB * 1024 * 1024);
    try {
      const result = await run(
        provider,
        sandbox,
        "head -c 2147483648 /dev/zero > /workspace/big; echo status=$?; stat -c %s /workspace/big",
        { signal: AbortSignal.timeout(120_000) },
      );
      const [status, size] = result.stdout.trim().split("\n");
      expect(status).not.toBe("status=0");
      expect(Number(size)).toBeLessThanOrEqual(limits.diskMB * 1024 * 1024);
      const shm = await run(
        provider,
        sandbox,
        "head -c 200000000 /dev/zero > /dev/shm/big; echo status=$?; stat -c %s /dev/shm/big; rm -f /dev/shm/big",
      );
      expect(shm.stdout.split("\n")[0]).not.toBe("status=0");
    } finally {
      await run(provider, sandbox, "rm -f /workspace/big");
    }
    expect((await run(provider, sandbox, "echo alive")).stdout).toBe("alive\n");
  }, 180_000);

  it("refuses a CPU limit it cannot enforce, and enforces one where it can", async () => {
    const { cgroupSupport } = await import("../src/local-cgroups.js");
    const support = cgroupSupport();
    if (support.kind === "none") {
      await expect(provider.doCreate({ resources: { vcpus: 1 } }, call())).rejects.toMatchObject({
        code: "Validation",
      });
      return;
    }
    const limited = await provider.doCreate({ resources: { vcpus: 0.5, memoryMB: 256 } }, call());
    const raw = (await provider.doGetInfo(limited, call())).raw as { limits: Limits };
    expect(raw.limits.kernel?.memoryBytes).toBe(256 * 1024 * 1024);
    if (raw.limits.cgroup?.kind === "v1" && raw.limits.cgroup.dirs?.cpu) {
      expect(readFileSync(`${raw.limits.cgroup.dirs.cpu}/cpu.cfs_quota_us`, "utf8").trim()).toBe("50000");
    } else if (raw.limits.cgroup?.dir) {
      expect(readFileSync(`${raw.limits.cgroup.dir}/cpu.max`, "utf8").trim()).toBe("50000 100000");
    }
    await provider.doDestroy(limited, call());
  });
});
