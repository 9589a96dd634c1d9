/**
 * One sandbox cannot take the host down (finding 5 of issue #12): a fork bomb, a 4 GB allocation and a 2 GB
 * write are each contained by the sandbox's default limits. Each test first checks, from inside the sandbox
 * and from the kernel's own files, that the limit it relies on is in force, and fails WITHOUT starting the
 * attack when it is not: a test machine must never be the victim.
 */
import { spawnSync } from "node:child_process";
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
} from "node:fs";
import type { DriverSandbox } from "@sbox/core/spec";
import { SandboxError } from "@sbox/core/spec";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalSandboxHandle, local } from "../src/index.js";
import {
  type AnyLocalProvider,
  call,
  destroyAll,
  eventually,
  run,
  tempOutsideTmp,
  tempStateRoot,
} from "./helpers.js";

const state = tempStateRoot("containment");
afterAll(() => state.cleanup());

const isRoot = process.getuid?.() === 0;
/**
 * Whether an unprivileged run has what a disk image needs there (fuse2fs, fusermount3, /dev/fuse open):
 * scripts/setup-test-machine.sh installs them, so CI's unprivileged pass tests the total limit.
 */
const hasFuseDisk =
  !isRoot &&
  ["/usr/bin/fuse2fs", "/usr/sbin/fuse2fs", "/sbin/fuse2fs"].some((path) => existsSync(path)) &&
  ["/usr/bin/fusermount3", "/bin/fusermount3"].some((path) => existsSync(path)) &&
  (() => {
    try {
      accessSync("/dev/fuse", constants.R_OK | constants.W_OK);
      return true;
    } catch {
      return false;
    }
  })();

interface Limits {
  mechanism: string;
  pids: number;
  memoryMB: number;
  diskMB: number;
  cgroup?: { kind: string; dirs?: Record<string, string>; dir?: string };
  kernel?: { pids?: number; memoryBytes?: number };
  enforced: { disk: string };
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

/**
 * A count of the processes in the PID namespace `ns` (as `readlink /proc/<pid>/ns/pid` names it), as the
 * host sees them: a sandbox's own processes, which test suites running side by side do not move.
 */
function pidNamespaceCount(ns: string): () => number {
  const inside = (pid: string) => {
    try {
      return readlinkSync(`/proc/${pid}/ns/pid`) === ns;
    } catch {
      return false;
    }
  };
  return () => readdirSync("/proc").filter((name) => /^\d+$/.test(name) && inside(name)).length;
}

/**
 * Samples a process count (the host's, unless told another) and this event loop's worst delay while `work`
 * runs.
 */
async function watchHost<T>(
  work: () => Promise<T>,
  processCount: () => number = hostProcessCount,
): Promise<{ result: T | unknown; maxProcesses: number; maxLagMs: number }> {
  let maxProcesses = processCount();
  let maxLagMs = 0;
  let last = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    maxLagMs = Math.max(maxLagMs, now - last - 100);
    last = now;
    maxProcesses = Math.max(maxProcesses, processCount());
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
    // With a cgroup the kernel counts the sandbox's own processes (pids.current). Without one, the
    // processes in the sandbox's PID namespace: either way other programs of the machine (test suites
    // running side by side, with 120 sandboxes and their disk daemons) do not move the count.
    const pidsDir = limits.cgroup?.dirs?.pids ?? limits.cgroup?.dir;
    const sandboxCount = pidsDir
      ? () => {
          try {
            return Number(readFileSync(`${pidsDir}/pids.current`, "utf8"));
          } catch {
            return 0;
          }
        }
      : pidNamespaceCount((await run(provider, sandbox, "readlink /proc/self/ns/pid")).stdout.trim());
    const before = sandboxCount();
    // The count sees the sandbox (its init at least): a count that cannot see it would prove nothing.
    expect(before, "processes of the sandbox seen before the bomb").toBeGreaterThan(0);
    const started = Date.now();
    const watched = await watchHost(
      () =>
        provider.doExec(sandbox, {
          // The bomb, then a wait for it: only the time limit ends this command.
          command: { argv: ["bash", "-c", ":(){ :|:& };:; wait"] },
          // The run's time limit (the client's timeoutMs arrives at the driver as this signal).
          signal: AbortSignal.timeout(8_000),
        }),
      sandboxCount,
    );
    const elapsed = Date.now() - started;
    // Ended within its time limit: by the limit (the driver sees the signal fire and rejects once the tree
    // is gone), or earlier, when the bomb ran out of processes and died down.
    if (SandboxError.isInstance(watched.result))
      expect(["Aborted", "Timeout"]).toContain(watched.result.code);
    expect(elapsed).toBeLessThan(30_000);
    expect(watched.maxProcesses).toBeLessThan(before + limit + 200);
    console.log(
      `fork bomb: ${elapsed} ms, ${pidsDir ? "cgroup" : "PID namespace"} processes ${before} -> at most ${watched.maxProcesses} (limit ${limit}), worst event loop delay ${watched.maxLagMs} ms`,
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
    const capBytes = limits.diskMB * 1024 * 1024;
    let script: string;
    const total = isRoot || hasFuseDisk;
    if (total) {
      // As root (a loop-mounted image) and unprivileged with fuse2fs (the same image through FUSE) the default
      // is a total limit: the three directories are one file system of at most diskMB (the sandbox's own
      // image), checked before anything is written.
      expect(limits.enforced.disk).toContain("together");
      expect(limits.enforced.disk).toContain(isRoot ? "loop-mounted" : "fuse2fs");
      const df = await run(
        provider,
        sandbox,
        "for d in /workspace /tmp /home/user; do stat -f -c '%b %S' $d; stat -c %d $d; done",
      );
      const lines = df.stdout.trim().split("\n");
      const [blocks, blockSize] = lines[0]!.split(" ").map(Number);
      expect(blocks! * blockSize!, "the file system's size").toBeLessThanOrEqual(capBytes);
      expect(new Set([lines[1], lines[3], lines[5]]).size, "one device behind all three").toBe(1);
      // 2 GB in four files of 512 MB across the three directories: each is below the per-file limit, so
      // only the total stops them.
      script = [
        "for f in /workspace/big1 /tmp/big2 /home/user/big3 /workspace/big4; do head -c 536870912 /dev/zero > $f || echo failed; done",
        "du -sk /workspace /tmp /home/user | awk '{ s += $1 } END { print s * 1024 }'",
      ].join("\n");
    } else {
      // Unprivileged without fuse2fs no image can be mounted: each file is limited (RLIMIT_FSIZE, checked
      // above), one 2 GB file stops at it.
      expect(limits.enforced.disk).toContain("not their total");
      script = "head -c 2147483648 /dev/zero > /workspace/big1 || echo failed; stat -c %s /workspace/big1";
    }
    try {
      const result = await run(provider, sandbox, script, { signal: AbortSignal.timeout(150_000) });
      const lines = result.stdout.trim().split("\n");
      expect(lines, "a write failed").toContain("failed");
      expect(result.stderr).toMatch(total ? /No space left on device/ : /File too large|File size limit/);
      expect(Number(lines.at(-1)), "what the sandbox holds, in bytes").toBeLessThanOrEqual(capBytes);
      const shm = await run(
        provider,
        sandbox,
        "head -c 200000000 /dev/zero > /dev/shm/big; echo status=$?; stat -c %s /dev/shm/big; rm -f /dev/shm/big",
      );
      expect(shm.stdout.split("\n")[0]).not.toBe("status=0");
    } finally {
      await run(provider, sandbox, "rm -f /workspace/big* /tmp/big* /home/user/big*");
    }
    expect((await run(provider, sandbox, "echo alive")).stdout).toBe("alive\n");
  }, 240_000);

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

describe("the total size of a sandbox's directories (bubblewrap)", () => {
  const DISK_MB = 48;
  /** As root a loop-mounted image, unprivileged one mounted with fuse2fs where it is installed. */
  const hasImage = isRoot || hasFuseDisk;
  let provider: AnyLocalProvider;
  let sandbox: DriverSandbox<LocalSandboxHandle>;
  let limits: Limits & { enforced: { disk: string } };

  beforeAll(async () => {
    // The default configuration: a disk image wherever one can be made.
    provider = local({ root: `${state.home}/disk`, isolation: "bwrap" });
    sandbox = await provider.doCreate({ resources: { diskMB: DISK_MB } }, call());
    limits = ((await provider.doGetInfo(sandbox, call())).raw as { limits: typeof limits }).limits;
  });
  afterAll(async () => {
    await destroyAll(provider);
  });

  /** Mount points of this host program's mount namespace at or below `dir`. */
  const mountsBelow = (dir: string) =>
    readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .map((line) => line.split(" ")[4] ?? "")
      .filter((point) => point === dir || point.startsWith(`${dir}/`));
  /** What a sandbox with a disk has mounted below its directory: as root the image and three binds. */
  const diskMounts = (dir: string) =>
    isRoot ? [`${dir}/disk`, `${dir}/home`, `${dir}/tmp`, `${dir}/workspace`].sort() : [`${dir}/disk`];
  /** Live fuse2fs processes working in `dir` or below (a daemon's cwd is its sandbox's directory). */
  const fuseDaemonsBelow = (dir: string) =>
    readdirSync("/proc")
      .filter((name) => /^\d+$/.test(name))
      .filter((pid) => {
        try {
          const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
          if (!stat.includes("(fuse2fs)") || /\) [ZX] /.test(stat)) return false;
          const cwd = readlinkSync(`/proc/${pid}/cwd`);
          return cwd === dir || cwd.startsWith(`${dir}/`);
        } catch {
          return false;
        }
      });

  it.skipIf(!hasImage)(
    "writing past the cap in many files fails with ENOSPC inside, the host keeps only the image, and other sandboxes work on",
    async () => {
      // The limit is in force before anything is written: the three directories are one file system of
      // about DISK_MB, mounted from the sandbox's own image (else the test stops here, having written nothing).
      expect(limits.enforced.disk).toContain("together");
      const dir = sandbox.native.dir;
      expect(mountsBelow(dir).sort()).toEqual(diskMounts(dir));
      const df = await run(
        provider,
        sandbox,
        "for d in /workspace /tmp /home/user; do stat -f -c '%b %S' $d; stat -c %d $d; done",
      );
      const lines = df.stdout.trim().split("\n");
      const [blocks, blockSize] = lines[0]!.split(" ").map(Number);
      expect(blocks! * blockSize!).toBeLessThanOrEqual(DISK_MB * 1024 * 1024);
      expect(blocks! * blockSize!).toBeGreaterThan(DISK_MB * 0.8 * 1024 * 1024);
      expect(new Set([lines[1], lines[3], lines[5]]).size, "one device behind all three").toBe(1);
      expect(lines[0]).toBe(lines[2]);
      const neighbour = await provider.doCreate({ resources: { diskMB: DISK_MB } }, call());

      // 3 MB files (each far below the per-file limit) in all three directories, twice the cap in total.
      const script = [
        "i=0; failed=''",
        `while [ $i -lt ${Math.ceil((2 * DISK_MB) / 3)} ]; do`,
        '  for d in /workspace /tmp /home/user; do head -c 3000000 /dev/zero > "$d/f$i" || failed=yes; done',
        '  i=$((i+1)); [ -n "$failed" ] && break',
        "done",
        // The errors went to stderr (a file of them would have no room either).
        "du -sk /workspace /tmp /home/user | awk '{ s += $1 } END { print s }'",
      ].join("\n");
      const written = await run(provider, sandbox, script, { signal: AbortSignal.timeout(120_000) });
      expect(written.stderr).toContain("No space left on device");
      expect(written.stderr).not.toContain("File too large");
      const lastLine = written.stdout.trim().split("\n").pop()!;
      expect(Number(lastLine) * 1024, "what the sandbox holds").toBeLessThanOrEqual(DISK_MB * 1024 * 1024);
      // On the host, the sandbox's writes are the image's blocks: at most its size.
      const image = statSync(`${dir}/disk.img`);
      expect(image.blocks * 512).toBeLessThanOrEqual(DISK_MB * 1024 * 1024);
      expect(mountsBelow(dir).sort()).toEqual(diskMounts(dir));

      // The full sandbox hurts only itself: another one writes, and the host's file API still serves both.
      const other = await run(provider, neighbour, "head -c 3000000 /dev/zero > /workspace/f && echo ok");
      expect(other.stdout).toBe("ok\n");
      const full = provider.doWriteFile!(sandbox, "/workspace/host-write", new Uint8Array(4_000_000), call());
      await expect(full).rejects.toBeInstanceOf(SandboxError);
      await provider.doDestroy(neighbour, call());

      // Space comes back when the sandbox removes files, and it works on.
      const freed = await run(
        provider,
        sandbox,
        "rm -f /workspace/f* /tmp/f* /home/user/f* /workspace/host-write; echo ok > /workspace/after; cat /workspace/after",
      );
      expect(freed.stdout).toBe("ok\n");
    },
    180_000,
  );

  it.skipIf(!isRoot)(
    "as root: the disk is mounted again when it is not (a reboot), and unmounted on destroy",
    async () => {
      const other = await provider.doCreate({ resources: { diskMB: DISK_MB } }, call());
      const dir = other.native.dir;
      await run(provider, other, "echo kept > /workspace/kept; echo also > /home/user/kept");
      await provider.doStop!(other, call());
      // What a reboot does: nothing mounted any more (unmounted here by the test, deepest first).
      for (const point of mountsBelow(dir).sort((a, b) => b.length - a.length)) {
        expect(spawnSync("umount", [point]).status).toBe(0);
      }
      expect(mountsBelow(dir)).toEqual([]);
      await provider.doResume!(other, call());
      expect((await run(provider, other, "cat /workspace/kept /home/user/kept")).stdout).toBe("kept\nalso\n");
      expect(mountsBelow(dir)).toHaveLength(4);
      await provider.doDestroy(other, call());
      expect(mountsBelow(dir)).toEqual([]);
      expect(spawnSync("losetup", ["-j", `${dir}/disk.img`], { encoding: "utf8" }).stdout).toBe("");
      expect(existsSync(dir)).toBe(false);
    },
  );

  it.skipIf(!hasFuseDisk)(
    "unprivileged: stop takes the disk and its fuse2fs down, start brings both back with the files, destroy leaves neither",
    async () => {
      const other = await provider.doCreate({ resources: { diskMB: DISK_MB } }, call());
      const dir = other.native.dir;
      expect(mountsBelow(dir)).toEqual([`${dir}/disk`]);
      expect(fuseDaemonsBelow(dir)).toHaveLength(1);
      await run(
        provider,
        other,
        "echo kept > /workspace/kept; echo also > /home/user/kept; echo t > /tmp/kept",
      );
      await provider.doStop!(other, call());
      expect(mountsBelow(dir)).toEqual([]);
      expect(fuseDaemonsBelow(dir)).toEqual([]);
      // Listing and reading the state of a stopped sandbox mount nothing.
      for await (const _ of provider.doList!({}, call()));
      expect((await provider.doGetInfo(other, call())).state).toBe("stopped");
      expect(mountsBelow(dir)).toEqual([]);
      await provider.doResume!(other, call());
      expect((await run(provider, other, "cat /workspace/kept /home/user/kept /tmp/kept")).stdout).toBe(
        "kept\nalso\nt\n",
      );
      expect(mountsBelow(dir)).toEqual([`${dir}/disk`]);
      expect(fuseDaemonsBelow(dir)).toHaveLength(1);
      // The files of a stopped sandbox can still be read (its disk is mounted for that).
      await provider.doStop!(other, call());
      const read = await provider.doReadFile!(other, "/workspace/kept", call());
      expect(Buffer.from(read as Uint8Array).toString()).toBe("kept\n");
      await provider.doDestroy(other, call());
      expect(mountsBelow(dir)).toEqual([]);
      expect(fuseDaemonsBelow(state.home)).toHaveLength(fuseDaemonsBelow(sandbox.native.dir).length);
      expect(existsSync(dir)).toBe(false);
    },
    120_000,
  );

  it.skipIf(!hasFuseDisk)(
    "unprivileged: a stop while the host holds a file of the disk open still ends its daemon, and keeps the files",
    async () => {
      const busy = await provider.doCreate({ resources: { diskMB: DISK_MB } }, call());
      const dir = busy.native.dir;
      await run(provider, busy, "echo kept > /workspace/kept");
      // An open descriptor on the mount makes its unmount busy: it is detached lazily, and the daemon, still
      // serving that descriptor, is asked to end after a grace time.
      const fd = openSync(`${busy.native.workspace}/kept`, "r");
      try {
        await provider.doStop!(busy, call());
        expect(mountsBelow(dir)).toEqual([]);
        expect(fuseDaemonsBelow(dir)).toEqual([]);
      } finally {
        closeSync(fd);
      }
      await provider.doResume!(busy, call());
      expect((await run(provider, busy, "cat /workspace/kept")).stdout).toBe("kept\n");
      await provider.doDestroy(busy, call());
      expect(mountsBelow(dir)).toEqual([]);
      expect(fuseDaemonsBelow(dir)).toEqual([]);
    },
    120_000,
  );

  it.skipIf(!hasFuseDisk)(
    "unprivileged: a killed fuse2fs or holder leaves no mount and no daemon behind its destroy",
    async () => {
      const crashed = await provider.doCreate({ resources: { diskMB: DISK_MB } }, call());
      const dir = crashed.native.dir;
      await run(provider, crashed, "echo x > /workspace/x");
      const [daemon] = fuseDaemonsBelow(dir);
      expect(daemon).toBeDefined();
      process.kill(Number(daemon), "SIGKILL");
      expect(await eventually(async () => fuseDaemonsBelow(dir).length === 0, 5_000)).toBe(true);
      // Its mount is stale now (ENOTCONN): still listed, until the destroy takes it.
      expect(mountsBelow(dir)).toEqual([`${dir}/disk`]);
      await provider.doDestroy(crashed, call());
      expect(mountsBelow(dir)).toEqual([]);
      expect(existsSync(dir)).toBe(false);

      const orphan = await provider.doCreate({ resources: { diskMB: DISK_MB } }, call());
      const orphanDir = orphan.native.dir;
      await run(provider, orphan, "echo x > /workspace/x");
      const holder = JSON.parse(readFileSync(`${orphanDir}/holder.json`, "utf8")) as {
        init: { pid: number };
      };
      process.kill(holder.init.pid, "SIGKILL");
      await provider.doDestroy(orphan, call());
      expect(mountsBelow(orphanDir)).toEqual([]);
      expect(fuseDaemonsBelow(state.home)).toHaveLength(fuseDaemonsBelow(sandbox.native.dir).length);
      expect(existsSync(orphanDir)).toBe(false);
    },
    120_000,
  );

  it.skipIf(!hasFuseDisk)(
    "unprivileged: the sandbox sees neither the daemon nor the image, and symlinks it plants keep host-side calls inside",
    async () => {
      const dir = sandbox.native.dir;
      const seen = await run(
        provider,
        sandbox,
        "cat /proc/[0-9]*/comm 2>/dev/null | sort -u; echo ---; cat /proc/self/mountinfo",
      );
      const [names, mountinfo] = seen.stdout.split("---\n");
      expect(names).not.toContain("fuse2fs");
      // The image's mounts name it `disk.img`, not by its host path.
      const fuseMounts = mountinfo!.split("\n").filter((line) => line.includes(" - fuse"));
      expect(fuseMounts).toHaveLength(3);
      for (const line of fuseMounts) expect(line).not.toContain(dir);
      expect((await run(provider, sandbox, `ls ${dir}/disk.img 2>&1 || echo absent`)).stdout).toContain(
        "absent",
      );
      // Symlinks to the host directory of the sandbox (its image included) and to a host directory the test
      // made (outside /tmp, which inside is the sandbox's own): the host's calls resolve them as the sandbox
      // would, and never reach either host directory.
      const { dir: outside, cleanup } = tempOutsideTmp("fuse-outside");
      const image = statSync(`${dir}/disk.img`);
      try {
        await run(
          provider,
          sandbox,
          `ln -s ${dir} /workspace/to-dir; ln -s ${outside} /workspace/to-outside`,
        );
        await expect(
          provider.doWriteFile!(
            sandbox,
            "/workspace/to-outside/planted",
            new TextEncoder().encode("x"),
            call(),
          ),
        ).rejects.toBeInstanceOf(SandboxError);
        // The state root is under the host's /tmp here: inside, that path is in the sandbox's own /tmp.
        await provider.doWriteFile!(
          sandbox,
          "/workspace/to-dir/disk.img",
          new TextEncoder().encode("x"),
          call(),
        ).catch(() => undefined);
        expect(readdirSync(outside)).toEqual([]);
        const after = statSync(`${dir}/disk.img`);
        expect([after.size, after.ino]).toEqual([image.size, image.ino]);
      } finally {
        await run(provider, sandbox, `rm -rf /workspace/to-dir /workspace/to-outside ${dir}`);
        cleanup();
      }
    },
  );

  it("diskImage: false: each file is limited, and getInfo says the total is not, and why", async () => {
    const plain = local({ root: `${state.home}/disk`, isolation: "bwrap", diskImage: false });
    const unlimited = await plain.doCreate({ resources: { diskMB: DISK_MB } }, call());
    const raw = (await plain.doGetInfo(unlimited, call())).raw as { limits: typeof limits };
    expect(raw.limits.enforced.disk).toContain("not their total");
    expect(raw.limits.enforced.disk).toContain("diskImage: false");
    expect(mountsBelow(unlimited.native.dir)).toEqual([]);
    await plain.doDestroy(unlimited, call());
  });

  it.skipIf(isRoot || hasFuseDisk)(
    "unprivileged without fuse2fs: diskImage is refused with the reason, not ignored",
    async () => {
      const asked = local({ root: `${state.home}/disk-asked`, isolation: "bwrap", diskImage: true });
      await expect(asked.doCreate({}, call())).rejects.toMatchObject({
        code: "NotSupported",
        message: expect.stringContaining("fuse2fs"),
      });
      // The default there: no total limit, said in getInfo with the reason and what to install.
      expect(limits.enforced.disk).toContain("not their total");
      expect(limits.enforced.disk).toContain("apt-get install fuse2fs fuse3");
      const inside = await limitsInside(provider, sandbox);
      expect(inside.fileSize, "RLIMIT_FSIZE inside the sandbox").toBe(DISK_MB * 1024 * 1024);
      expect(mountsBelow(sandbox.native.dir)).toEqual([]);
    },
  );
});
