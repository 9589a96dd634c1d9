/**
 * `kill()` without a signal asks first (SIGTERM) and insists (SIGKILL) only after a grace period, for a
 * background process (`process.kill()`), by pid (`commands.kill(pid)`) and for a running command
 * (`handle.kill()`), on real processes of a shell provider through the core's own emulations (E3, E4).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { shDriver } from "../../test/sh-driver.js";
import { createSandboxClient } from "../client/create-sandbox-client.js";
import { SandboxError } from "../errors/sandbox-error.js";
import type { CommandHandle, Sandbox, SandboxProcess } from "./sandbox-types.js";

// A process that says it got SIGTERM and exits 3: only a SIGTERM that came first lets it say so.
const POLITE = "trap 'echo got-TERM; exit 3' TERM; while :; do sleep 0.05; done";
// A process tree that ignores SIGTERM (inherited by its children): only SIGKILL ends it.
const STUBBORN = "trap '' TERM; echo ready; while :; do sleep 0.05; done";

async function started(process: SandboxProcess, marker: string): Promise<void> {
  for await (const chunk of process.stdout) if (chunk.includes(marker)) return;
}

/**
 * Runs `script` and resolves once it printed `ready`, with its handle inside an object (a handle is
 * awaitable: returned bare, the promise would wait for the command's end).
 */
async function runUntilReady(sandbox: Sandbox, script: string): Promise<{ handle: CommandHandle }> {
  let seen = "";
  let onReady!: () => void;
  const ready = new Promise<void>((resolve) => {
    onReady = resolve;
  });
  const handle = sandbox.commands.run(script, {
    onStdout: (chunk) => {
      seen += chunk;
      if (seen.includes("ready")) onReady();
    },
  });
  await Promise.race([ready, handle.then(() => undefined)]);
  return { handle };
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

  test("handle.kill() lets a command that handles SIGTERM end on its own: its handler's output and exit code arrive", async () => {
    const { handle } = await runUntilReady(sandbox, `echo ready; ${POLITE}`);
    await handle.kill();
    const result = await handle;
    expect(result.stdout).toContain("got-TERM");
    expect(result.exitCode).toBe(3);
    expect(result.signal).toBeUndefined();
  });

  test("handle.kill() sends SIGKILL once the grace period has passed and SIGTERM was ignored", async () => {
    const { handle } = await runUntilReady(sandbox, STUBBORN);
    const before = Date.now();
    await handle.kill(undefined, { graceMs: 400 });
    expect(Date.now() - before).toBeGreaterThanOrEqual(390);
    const result = await handle;
    expect(result.exitCode).toBe(137);
    expect(result.signal).toBe("SIGKILL");
  });

  test("handle.kill(SIGKILL) and kill(SIGUSR1) send exactly that signal", async () => {
    const { handle: polite } = await runUntilReady(sandbox, `echo ready; ${POLITE}`);
    await polite.kill("SIGKILL");
    const killed = await polite;
    expect(killed.stdout).not.toContain("got-TERM");
    expect(killed.signal).toBe("SIGKILL");

    // Not SIGINT: a POSIX shell starts E3's detached command with SIGINT and SIGQUIT ignored, untrappable.
    const { handle: user } = await runUntilReady(
      sandbox,
      "trap 'echo got-USR1; exit 4' USR1; trap 'echo got-TERM; exit 3' TERM; echo ready; while :; do sleep 0.05; done",
    );
    await user.kill("USR1");
    const result = await user;
    expect(result.stdout).toContain("got-USR1");
    expect(result.stdout).not.toContain("got-TERM");
    expect(result.exitCode).toBe(4);
  });

  test("handle.kill() with a bad signal or grace period rejects with Validation and leaves the command running", async () => {
    const { handle } = await runUntilReady(sandbox, STUBBORN);
    for (const [signal, options] of [
      ["SIGNOPE", undefined],
      [undefined, { graceMs: -5 }],
      [undefined, { graceMs: Number.POSITIVE_INFINITY }],
    ] as const) {
      const error = await handle.kill(signal, options).catch((e: unknown) => e);
      expect(SandboxError.isInstance(error) && error.code).toBe("Validation");
    }
    await handle.kill("KILL");
    expect((await handle).signal).toBe("SIGKILL");
  });

  test("handle.kill() of a command that already ended does nothing", async () => {
    const handle = sandbox.commands.run("echo done");
    const result = await handle;
    await handle.kill();
    expect(result.exitCode).toBe(0);
  });
});
