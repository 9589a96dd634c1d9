import { randomUUID } from "node:crypto";
import { createSandboxClient, SandboxError, type SandboxProvider } from "@sbox/core";
import { afterEach, describe, expect, it } from "vitest";
import { NAMESPACE_LABEL, RECORD_LABEL } from "../src/manager-labels.js";
import { gate, type ManagerFixture, managerFixture, wrapProvider } from "./fixtures.js";

async function rejection(promise: Promise<unknown>): Promise<SandboxError> {
  try {
    await promise;
  } catch (error) {
    if (SandboxError.isInstance(error)) return error;
    throw new Error(`expected a SandboxError, got ${String(error)}`);
  }
  throw new Error("expected a rejection");
}

/** Counts driver calls and lets a test hold one of them at a gate. */
function instrumented() {
  const calls = { create: 0, stop: 0, resume: 0, destroy: 0 };
  const gates: { stop?: ReturnType<typeof gate>; create?: ReturnType<typeof gate> } = {};
  const wrap = (base: SandboxProvider): SandboxProvider =>
    wrapProvider(base, {
      doCreate: async (spec, options) => {
        calls.create++;
        const sandbox = await base.doCreate(spec, options);
        const held = gates.create;
        if (held) {
          held.enter();
          await held.wait;
        }
        return sandbox;
      },
      doStop: async (sandbox, options) => {
        calls.stop++;
        const held = gates.stop;
        if (held) {
          held.enter();
          await held.wait;
        }
        return base.doStop!(sandbox, options);
      },
      doResume: async (sandbox, options) => {
        calls.resume++;
        return base.doResume!(sandbox, options);
      },
      doDestroy: async (sandbox, options) => {
        calls.destroy++;
        return base.doDestroy(sandbox, options);
      },
    });
  return { calls, gates, wrap };
}

const later = (ms: number) => () => new Date(Date.now() + ms);

describe("SandboxManager concurrency, leases and reconcile (provider-local)", () => {
  const fixtures: ManagerFixture[] = [];
  const fixture = (options?: Parameters<typeof managerFixture>[0]) => {
    const f = managerFixture(options);
    fixtures.push(f);
    return f;
  };
  afterEach(async () => {
    for (const f of fixtures.splice(0)) await f.cleanup();
  });

  it("lets many concurrent resumes from two workers resume the sandbox once", async () => {
    const probe = instrumented();
    const { manager, another } = fixture({ wrap: probe.wrap });
    const second = another();
    const record = await manager.create();
    await manager.stop(record.id);
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 ? manager : second).resume(record.id)),
    );
    expect(results.every((r) => r.status === "running")).toBe(true);
    expect(probe.calls.resume).toBe(1);
    const history = await manager.history(record.id);
    expect(history.filter((h) => h.toStatus === "resuming")).toHaveLength(1);
  });

  it("lets many concurrent destroys destroy the sandbox once", async () => {
    const probe = instrumented();
    const { manager, another } = fixture({ wrap: probe.wrap });
    const second = another();
    const record = await manager.create();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? manager : second).destroy(record.id)),
    );
    expect(new Set(results.map((r) => `${r.status}@${r.version}`))).toEqual(new Set(["destroyed@6"]));
    expect(probe.calls.destroy).toBe(1);
  });

  it("makes a caller wait for a transition in progress, then fail with Conflict once its wait is over", async () => {
    const probe = instrumented();
    const { manager, another } = fixture({ wrap: probe.wrap });
    const impatient = another({ transitionTimeoutMs: 300, workerId: "impatient" });
    const patient = another({ transitionTimeoutMs: 20_000, workerId: "patient" });
    const record = await manager.create();
    probe.gates.stop = gate();
    const stopping = manager.stop(record.id);
    await probe.gates.stop.entered;

    const started = Date.now();
    const busy = await rejection(impatient.exec(record.id, "true"));
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(busy.code).toBe("Conflict");
    expect(busy.retryable).toBe(true);
    expect(busy.message).toContain("busy: stopping by worker");
    expect(busy.message).toContain(manager.workerId);
    expect((await rejection(impatient.destroy(record.id))).code).toBe("Conflict");

    const waiting = patient.stop(record.id);
    await new Promise((resolve) => setTimeout(resolve, 200));
    probe.gates.stop.open();
    const [mine, theirs] = await Promise.all([stopping, waiting]);
    expect(mine.status).toBe("stopped");
    expect(theirs.version).toBe(mine.version);
    expect(probe.calls.stop).toBe(1);
  });

  it("renews the lease of a long transition, so reconcile leaves it alone", async () => {
    const probe = instrumented();
    const { manager, another } = fixture({ wrap: probe.wrap, leaseMs: 300 });
    const reconciler = another({ workerId: "reconciler" });
    const record = await manager.create();
    probe.gates.stop = gate();
    const stopping = manager.stop(record.id);
    await probe.gates.stop.entered;
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const report = await reconciler.reconcile();
    expect(report.settled).toEqual([]);
    probe.gates.stop.open();
    expect((await stopping).status).toBe("stopped");
    const kinds = (await manager.history(record.id)).map((h) => h.kind);
    expect(kinds.filter((k) => k === "lease").length).toBeGreaterThanOrEqual(2);
  });

  it("settles an abandoned transition once its lease expired; the late worker loses its write; reconcile aligns after", async () => {
    const probe = instrumented();
    const { manager, another } = fixture({ wrap: probe.wrap });
    const reconciler = another({ workerId: "reconciler", now: later(10 * 60_000) });
    const record = await manager.create();
    probe.gates.stop = gate();
    const stopping = manager.stop(record.id);
    await probe.gates.stop.entered;

    const report = await reconciler.reconcile();
    expect(report.settled).toEqual([
      expect.objectContaining({ id: record.id, from: "stopping", to: "running" }),
    ]);
    expect(report.settled[0]?.detail).toContain(`worker ${manager.workerId} abandoned the stopping`);
    expect((await manager.get(record.id)).status).toBe("running");

    // The worker was only slow: it stops the sandbox, but may no longer write the record.
    probe.gates.stop.open();
    const lost = await rejection(stopping);
    expect(lost.code).toBe("Conflict");
    expect(lost.message).toContain("taken over");
    expect((await manager.get(record.id)).status).toBe("running");
    const aligned = await reconciler.reconcile();
    expect(aligned.aligned).toEqual([
      expect.objectContaining({ id: record.id, from: "running", to: "stopped" }),
    ]);
    expect((await manager.get(record.id)).status).toBe("stopped");

    const history = await manager.history(record.id);
    for (let i = 1; i < history.length; i++) {
      expect(history[i]!.version).toBe(i + 1);
      expect(history[i]!.fromStatus).toBe(history[i - 1]!.toStatus);
    }
  });

  it("finds by label a sandbox whose create was abandoned before the record learnt its id, and destroys it", async () => {
    const probe = instrumented();
    const { manager, another, provider } = fixture({ wrap: probe.wrap });
    const reconciler = another({ workerId: "reconciler", now: later(10 * 60_000) });
    probe.gates.create = gate();
    const creating = manager.create({ labels: { job: "crash" } });
    await probe.gates.create.entered;
    const [pending] = await manager.list({ labels: { job: "crash" } });
    expect(pending).toMatchObject({ status: "creating", sandboxId: null });

    const client = createSandboxClient({ provider });
    const labelled = async () => {
      const found = [];
      for await (const info of client.list({ metadata: { [RECORD_LABEL]: pending!.id } })) found.push(info);
      return found;
    };
    const [orphan] = await labelled();
    expect(orphan).toBeDefined();

    const report = await reconciler.reconcile();
    expect(report.settled).toEqual([
      expect.objectContaining({ id: pending!.id, from: "creating", to: "failed" }),
    ]);
    expect(report.destroyed).toEqual([
      { id: pending!.id, sandboxId: orphan!.id, reason: "abandoned create" },
    ]);
    const settled = await manager.get(pending!.id);
    expect(settled).toMatchObject({ status: "failed", sandboxId: orphan!.id, error: { code: "Abandoned" } });
    expect(await labelled()).toEqual([]);

    probe.gates.create.open();
    expect((await rejection(creating)).code).toBe("Conflict");
    expect((await manager.get(pending!.id)).status).toBe("failed");
    await client.dispose();
  });

  it("aligns records with the provider: stopped or destroyed behind its back, unrecorded and leftover sandboxes", async () => {
    const { manager, provider } = fixture();
    const client = createSandboxClient({ provider });
    const stoppedBehind = await manager.create();
    const destroyedBehind = await manager.create();
    const destroyedRecord = await manager.create();
    await manager.destroy(destroyedRecord.id);
    await (await client.connect(stoppedBehind.sandboxId!)).stop();
    await (await client.connect(destroyedBehind.sandboxId!)).destroy();

    const unrecordedId = `sbx_${randomUUID().replaceAll("-", "")}`;
    const unrecorded = await client.create({
      metadata: { [RECORD_LABEL]: unrecordedId, [NAMESPACE_LABEL]: "default" },
    });
    const leftover = await client.create({
      metadata: { [RECORD_LABEL]: destroyedRecord.id, [NAMESPACE_LABEL]: "default" },
    });
    const foreign = await client.create({
      metadata: { [RECORD_LABEL]: unrecordedId, [NAMESPACE_LABEL]: "elsewhere" },
    });

    const report = await manager.reconcile();
    expect(report.errors).toEqual([]);
    expect(report.aligned).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: stoppedBehind.id, from: "running", to: "stopped" }),
        expect.objectContaining({ id: destroyedBehind.id, from: "running", to: "destroyed" }),
      ]),
    );
    expect(report.aligned).toHaveLength(2);
    expect(report.adopted).toEqual([{ id: unrecordedId, sandboxId: unrecorded.id, status: "running" }]);
    expect(report.destroyed).toEqual([
      { id: destroyedRecord.id, sandboxId: leftover.id, reason: "record is destroyed" },
    ]);
    expect((await manager.get(destroyedBehind.id)).error).toMatchObject({ code: "Gone" });
    expect(await manager.get(unrecordedId)).toMatchObject({
      status: "running",
      sandboxId: unrecorded.id,
      provider: "local",
    });
    expect((await manager.history(unrecordedId))[0]).toMatchObject({ kind: "adopt", toStatus: "running" });
    expect((await rejection(client.connect(leftover.id))).code).toBe("NotFound");
    expect((await (await client.connect(foreign.id)).getInfo()).state).toBe("running");

    // A second pass finds nothing left to do.
    const again = await manager.reconcile();
    expect([again.settled, again.aligned, again.adopted, again.destroyed, again.errors]).toEqual([
      [],
      [],
      [],
      [],
      [],
    ]);
    // The adopted record is managed like any other.
    expect((await manager.exec(unrecordedId, "echo adopted")).stdout).toBe("adopted\n");
    await (await client.connect(foreign.id)).destroy();
    await client.dispose();
  });

  it("reconciles only the records it is given", async () => {
    const { manager, provider } = fixture();
    const client = createSandboxClient({ provider });
    const a = await manager.create();
    const b = await manager.create();
    await (await client.connect(a.sandboxId!)).stop();
    await (await client.connect(b.sandboxId!)).stop();
    const report = await manager.reconcile([b.id]);
    expect(report.aligned.map((c) => c.id)).toEqual([b.id]);
    expect((await manager.get(a.id)).status).toBe("running");
    expect((await rejection(manager.reconcile("nope" as never))).code).toBe("Validation");
    await client.dispose();
  });

  it("stops expired sandboxes and extends timeouts by the manager's clock", async () => {
    let clock = Date.now();
    const { manager } = fixture({ now: () => new Date(clock) });
    const short = await manager.create({ spec: { ttlMs: 60_000 } });
    const long = await manager.create({ spec: { ttlMs: 3_600_000 } });
    const forever = await manager.create();
    expect(short.expiresAt?.getTime()).toBe(clock + 60_000);
    expect(forever.expiresAt).toBeNull();
    expect(await manager.stopExpired()).toEqual({ stopped: [], destroyed: [], failed: [] });

    clock += 61_000;
    const extended = await manager.extendTimeout(long.id, 10_000);
    expect(extended.expiresAt?.getTime()).toBe(clock + 10_000);
    const result = await manager.stopExpired();
    expect(result.stopped.map((r) => r.id)).toEqual([short.id]);
    expect((await manager.get(short.id)).status).toBe("stopped");

    clock += 11_000;
    expect((await manager.stopExpired()).stopped.map((r) => r.id)).toEqual([long.id]);
    expect((await manager.get(forever.id)).status).toBe("running");
    expect((await rejection(manager.extendTimeout(forever.id, -5))).code).toBe("Validation");
    await manager.destroy(forever.id);
    expect((await rejection(manager.extendTimeout(forever.id, 1000))).code).toBe("InvalidState");
  });

  it("keeps writing when an onChange observer throws", async () => {
    const { manager } = fixture({
      onChange: () => {
        throw new Error("observer bug");
      },
    });
    const record = await manager.create();
    expect((await manager.stop(record.id)).status).toBe("stopped");
  });
});
