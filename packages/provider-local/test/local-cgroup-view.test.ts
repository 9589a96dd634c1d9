/**
 * A sandbox sees its own cgroup, and only it, read-only at /sys/fs/cgroup: programs inside (the core's
 * metrics emulation among them) measure the sandbox's memory there instead of the host's /proc/meminfo.
 * Only where the provider makes cgroups (as root); elsewhere the test says why it skips.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cgroupSupport } from "../src/local-cgroups.js";
import { call, destroyAll, providerFor, run, tempStateRoot } from "./helpers.js";

const support = cgroupSupport();
const why = support.kind === "none" ? ` (SKIPPED: no cgroups here: ${support.reason})` : "";

describe.skipIf(support.kind === "none")(`the sandbox's own cgroup inside its view${why}`, () => {
  // Made in the suite's own hooks: a skipped suite runs none, and a directory made at import would stay.
  let state: ReturnType<typeof tempStateRoot>;
  beforeAll(() => {
    state = tempStateRoot("cgroup-view");
  });
  afterAll(() => state.cleanup());
  it("is there, read-only, counts the sandbox's own memory, and shows no other group", async () => {
    const provider = providerFor("bwrap", state.home);
    const sandbox = await provider.doCreate({}, call());
    try {
      const usage =
        support.kind === "v2"
          ? "/sys/fs/cgroup/memory.current"
          : "/sys/fs/cgroup/memory/memory.usage_in_bytes";
      const idle = Number((await run(provider, sandbox, `cat ${usage}`)).stdout.trim());
      expect(idle).toBeGreaterThan(0);
      // 64 MiB held by a process of the sandbox shows in the sandbox's own figure.
      const held = await run(
        provider,
        sandbox,
        `head -c 67108864 /dev/zero > /dev/shm/held 2>/dev/null || dd if=/dev/zero of=/tmp/held bs=1M count=64 2>/dev/null; cat ${usage}`,
      );
      expect(Number(held.stdout.trim()) - idle).toBeGreaterThan(32 * 1024 * 1024);
      const write = await run(provider, sandbox, `echo 1 > ${usage}; echo rc=$?`);
      expect(write.stdout).toMatch(/rc=[1-9]/);
      // No other group of the host: the directories inside are the sandbox's own (no sibling sandboxes).
      const listed = await run(provider, sandbox, "ls /sys/fs/cgroup; ls /sys 2>&1");
      expect(listed.stdout).not.toMatch(/sbox-local/);
      expect(listed.stdout.split("\n")).not.toContain("kernel");
    } finally {
      await destroyAll(provider);
    }
  });
});
