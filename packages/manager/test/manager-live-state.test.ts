/**
 * Every lifecycle verb goes through the record, and the record follows the provider's live state: a
 * sandbox paused behind the manager's back (another program, `sbox pause` before it went through the
 * record) is resumed by `resume`, instead of being taken for running because the record says so.
 */
import { createSandboxClient } from "@sbox/core";
import { afterEach, describe, expect, it } from "vitest";
import { type ManagerFixture, managerFixture } from "./fixtures.js";

describe("SandboxManager follows the provider's live state (provider-local)", () => {
  const fixtures: ManagerFixture[] = [];
  afterEach(async () => {
    for (const f of fixtures.splice(0)) await f.cleanup();
  });

  it("resume resumes a sandbox paused behind the manager's back, though its record said running", async () => {
    const f = managerFixture();
    fixtures.push(f);
    const record = await f.manager.create();
    const client = createSandboxClient({ provider: f.provider });
    const direct = await client.connect(record.sandboxId!);
    await direct.pause();
    expect((await direct.getInfo()).state).toBe("paused");
    expect((await f.manager.get(record.id)).status).toBe("running");

    const resumed = await f.manager.resume(record.id);
    expect(resumed.status).toBe("running");
    expect((await direct.getInfo()).state).toBe("running");
    expect((await f.manager.exec(record.id, "echo alive")).stdout).toBe("alive\n");
    const history = await f.manager.history(record.id);
    expect(history.slice(-3).map((entry) => [entry.kind, entry.fromStatus, entry.toStatus])).toEqual([
      ["reconcile", "running", "stopped"],
      ["transition", "stopped", "resuming"],
      ["transition", "resuming", "running"],
    ]);
    expect(history.at(-3)?.detail).toBe("the provider reports paused");
    await client.dispose();
  });

  it("pause goes through the record (stopped), and resume brings the same sandbox back", async () => {
    const f = managerFixture();
    fixtures.push(f);
    const record = await f.manager.create();
    const client = createSandboxClient({ provider: f.provider });
    const direct = await client.connect(record.sandboxId!);
    const paused = await f.manager.pause(record.id);
    expect(paused.status).toBe("stopped");
    expect((await direct.getInfo()).state).toBe("paused");
    // Idempotent, like stop.
    expect((await f.manager.pause(record.id)).version).toBe(paused.version);
    expect((await f.manager.resume(record.id)).status).toBe("running");
    expect((await direct.getInfo()).state).toBe("running");
    await client.dispose();
  });

  it("stop of a sandbox resumed behind the manager's back stops it", async () => {
    const f = managerFixture();
    fixtures.push(f);
    const record = await f.manager.create();
    await f.manager.stop(record.id);
    const client = createSandboxClient({ provider: f.provider });
    const direct = await client.connect(record.sandboxId!);
    await direct.resume();
    expect((await f.manager.get(record.id)).status).toBe("stopped");
    expect((await f.manager.stop(record.id)).status).toBe("stopped");
    expect((await direct.getInfo()).state).toBe("stopped");
    await client.dispose();
  });
});
