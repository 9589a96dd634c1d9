/**
 * `kill()` without a signal asks first (SIGTERM) and insists (SIGKILL) only after a grace period, for a
 * background process (`process.kill()`) and by pid (`commands.kill(pid)`), on real processes of a shell
 * provider through the core's own background emulation.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { shDriver } from "../../test/sh-driver.js";
import { createSandboxClient } from "../client/create-sandbox-client.js";
import { SandboxError } from "../errors/sandbox-error.js";
import type { Sandbox, SandboxProcess } from "./sandbox-types.js";

// A process that says it got SIGTERM and exits 3: only a SIGTERM that came first lets it say so.
const POLITE = "trap 'echo got-TERM; exit 3' TERM; while :; do sleep 0.05; done";
// A process tree that ignores SIGTERM (inherited by its children): only SIGKILL ends it.
const STUBBORN = "trap '' TERM; echo ready; while :; do sleep 0.05; done";

async function started(process: SandboxProcess, marker: string): Promise<void> {
  for await (const chunk of process.stdout) if (chunk.includes(marker)) return;
}

describe("kill() sends SIGTERM, then SIGKILL after a grace period", () => {
  const provider = shDriver({ userland: "dash" });
  const client = createSandboxClient({ provider });
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await client.create();
  });
  afterAll(async () => {
    await sandbox.destroy();
    provider.cleanup();
  });

  test("process.kill() without a signal lets a process that handles SIGTERM end on its own", async () => {
    const process = await sandbox.commands.spawn(["sh", "-c", `echo ready; ${POLITE}`]);
    await started(process, "ready");
    await process.kill();
    const exit = await process.wait();
    expect(exit.exitCode).toBe(3);
  });

  test("process.kill() sends SIGKILL once the grace period has passed and SIGTERM was ignored", async () => {
    const process = await sandbox.commands.spawn(["sh", "-c", STUBBORN]);
    await started(process, "ready");
    const before = Date.now();
    await process.kill(undefined, { graceMs: 400 });
    const waited = Date.now() - before;
    const exit = await process.wait();
    expect(exit.signal).toBe("SIGKILL");
    expect(waited).toBeGreaterThanOrEqual(390);
  });

  test("commands.kill(pid) asks first, then insists, and reports when the process ended", async () => {
    const polite = await sandbox.commands.spawn(["sh", "-c", `echo ready; ${POLITE}`]);
    await started(polite, "ready");
    await sandbox.commands.kill(polite.pid);
    expect((await polite.wait()).exitCode).toBe(3);

    const stubborn = await sandbox.commands.spawn(["sh", "-c", STUBBORN]);
    await started(stubborn, "ready");
    await sandbox.commands.kill(stubborn.pid, undefined, { graceMs: 300 });
    expect((await stubborn.wait()).signal).toBe("SIGKILL");
    const listed = await sandbox.commands.list();
    expect(listed.find((p) => p.pid === stubborn.pid)?.running).toBe(false);
  });

  test("a named signal is sent alone; SIGKILL at once when asked for", async () => {
    const stubborn = await sandbox.commands.spawn(["sh", "-c", STUBBORN]);
    await started(stubborn, "ready");
    await stubborn.kill("TERM");
    const still = await sandbox.commands.list();
    expect(still.find((p) => p.pid === stubborn.pid)?.running).toBe(true);
    await stubborn.kill("SIGKILL");
    expect((await stubborn.wait()).signal).toBe("SIGKILL");
  });

  test("a bad grace period is a Validation error, sent before any signal", async () => {
    const process = await sandbox.commands.spawn(["sh", "-c", STUBBORN]);
    for (const graceMs of [-1, Number.NaN, 1e12]) {
      const error = await process.kill(undefined, { graceMs }).catch((e: unknown) => e);
      expect(SandboxError.isInstance(error) && error.code).toBe("Validation");
    }
    await process.kill("KILL");
    expect((await process.wait()).signal).toBe("SIGKILL");
  });
});
