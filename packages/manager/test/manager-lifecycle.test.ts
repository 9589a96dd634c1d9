import { createSandboxClient, SandboxError } from "@sbox/core";
import { afterEach, describe, expect, it } from "vitest";
import { NAMESPACE_LABEL, RECORD_LABEL } from "../src/manager-labels.js";
import type { HistoryEntry } from "../src/sandbox-record.js";
import { type ManagerFixture, managerFixture } from "./fixtures.js";
import { HOSTILE } from "./store-suite.js";

async function rejection(promise: Promise<unknown>): Promise<SandboxError> {
  try {
    await promise;
  } catch (error) {
    if (SandboxError.isInstance(error)) return error;
    throw new Error(`expected a SandboxError, got ${String(error)}`);
  }
  throw new Error("expected a rejection");
}

describe("SandboxManager lifecycle (provider-local)", () => {
  const fixtures: ManagerFixture[] = [];
  const fixture = (options?: Parameters<typeof managerFixture>[0]) => {
    const f = managerFixture(options);
    fixtures.push(f);
    return f;
  };
  afterEach(async () => {
    for (const f of fixtures.splice(0)) await f.cleanup();
  });

  it("creates a running sandbox with a record, labels it at the provider, runs commands, destroys and keeps the record", async () => {
    const events: HistoryEntry[] = [];
    const { manager, provider } = fixture({ onChange: (entry) => events.push(entry) });
    const record = await manager.create({
      ownerId: "alice",
      labels: { team: "infra" },
      metadata: { ticket: 42 },
    });
    expect(record.status).toBe("running");
    expect(record.id).toMatch(/^sbx_[0-9a-f]{32}$/);
    expect(record.sandboxId).toMatch(/^local:/);
    expect(record.lease).toBeNull();
    expect(record).toMatchObject({
      ownerId: "alice",
      labels: { team: "infra" },
      metadata: { ticket: 42 },
      provider: "local",
    });
    expect(await manager.get(record.id)).toEqual(record);

    const history = await manager.history(record.id);
    expect(history.map((h) => [h.kind, h.fromStatus, h.toStatus])).toEqual([
      ["create", null, "creating"],
      ["transition", "creating", "starting"],
      ["update", "starting", "starting"],
      ["transition", "starting", "running"],
    ]);
    expect(events.map((e) => e.version)).toEqual([1, 2, 3, 4]);

    const client = createSandboxClient({ provider });
    const listed = [];
    for await (const info of client.list({ metadata: { [RECORD_LABEL]: record.id } })) listed.push(info);
    expect(listed.map((i) => i.id)).toEqual([record.sandboxId]);
    expect(listed[0]?.metadata[NAMESPACE_LABEL]).toBe("default");

    const result = await manager.exec(record.id, ["printf", "%s", HOSTILE[2]!]);
    expect(result).toMatchObject({ exitCode: 0, stdout: HOSTILE[2] });
    expect((await manager.exec(record.id, "exit 7")).exitCode).toBe(7);

    const destroyed = await manager.destroy(record.id);
    expect(destroyed.status).toBe("destroyed");
    expect((await rejection(client.connect(record.sandboxId!))).code).toBe("NotFound");
    expect((await manager.get(record.id)).status).toBe("destroyed");
    // Destroy is idempotent; other operations on a destroyed record are InvalidState.
    expect((await manager.destroy(record.id)).version).toBe(destroyed.version);
    expect((await rejection(manager.exec(record.id, "true"))).code).toBe("InvalidState");
    expect((await rejection(manager.resume(record.id))).code).toBe("InvalidState");
    await client.dispose();
  });

  it("answers NotFound for unknown ids and Validation for malformed ones", async () => {
    const { manager } = fixture();
    expect((await rejection(manager.get("sbx_00000000000000000000000000000000"))).code).toBe("NotFound");
    for (const id of HOSTILE.filter((s) => s.length > 0)) {
      expect((await rejection(manager.exec(id, "true"))).code).toBe("NotFound");
    }
    expect((await rejection(manager.get(""))).code).toBe("Validation");
    expect((await rejection(manager.get(42 as unknown as string))).code).toBe("Validation");
  });

  it("rejects bad create input with Validation before creating anything", async () => {
    const { manager } = fixture();
    const bad: unknown[] = [
      { color: "red" },
      { provider: "nope" },
      { labels: { "bad key!": "x" } },
      { labels: { ok: "nul\0" } },
      { labels: { ok: 5 } },
      { ownerId: "" },
      { metadata: { when: new Date() } },
      { metadata: { n: Number.NaN } },
      { spec: { metadata: { [RECORD_LABEL]: "forged" } } },
      { spec: { unknownField: true } },
      { spec: { ttlMs: -1 } },
      { spec: { setup: ["   "] } },
      { spec: { setup: [{ run: [] }] } },
      { spec: { start: 42 } },
      { spec: { git: { url: "--upload-pack=evil" } } },
      { spec: { git: { url: "https://example.invalid/r.git", depth: 0 } } },
      { spec: { git: { url: "https://example.invalid/r.git", ref: "--force" } } },
      { spec: { git: { url: "ssh://git@example.invalid/r.git", credentials: { token: "abcd1234" } } } },
      { spec: { files: [{ path: "a", content: 5 }] } },
      { spec: { ports: [70000] } },
      { spec: { env: { "BAD-NAME": "x" } } },
    ];
    for (const input of bad) {
      const error = await rejection(manager.create(input as never));
      expect(error.code, JSON.stringify(input)).toBe("Validation");
    }
    expect(await manager.list()).toEqual([]);
  });

  it("keeps hostile strings in labels, owner and metadata, and filters by them", async () => {
    const { manager } = fixture();
    const labels = Object.fromEntries(HOSTILE.map((value, i) => [`k${i}`, value]));
    const record = await manager.create({ ownerId: HOSTILE[0]!, labels, metadata: { hostile: HOSTILE } });
    expect(await manager.get(record.id)).toMatchObject({
      ownerId: HOSTILE[0],
      labels,
      metadata: { hostile: HOSTILE },
    });
    expect((await manager.list({ labels: { k2: HOSTILE[2]! } })).map((r) => r.id)).toEqual([record.id]);
    expect((await manager.find({ ownerId: HOSTILE[0]! }))?.id).toBe(record.id);
    expect(await manager.find({ ownerId: "nobody" })).toBeUndefined();
  });

  it("stops and resumes; commands need a running sandbox unless autoResume is on", async () => {
    const { manager, another } = fixture();
    const record = await manager.create({ spec: { files: [{ path: "kept.txt", content: "still here" }] } });
    const stopped = await manager.stop(record.id);
    expect(stopped.status).toBe("stopped");
    expect((await manager.stop(record.id)).version).toBe(stopped.version);
    const error = await rejection(manager.exec(record.id, "true"));
    expect(error.code).toBe("InvalidState");
    expect(error.message).toContain("resume it first");

    const resumed = await manager.resume(record.id);
    expect(resumed.status).toBe("running");
    expect(await manager.readFile(record.id, "kept.txt", { encoding: "utf8" })).toBe("still here");
    await manager.stop(record.id);

    const auto = another({ autoResume: true });
    expect((await auto.exec(record.id, "echo up")).stdout).toBe("up\n");
    expect((await auto.get(record.id)).status).toBe("running");
    const statuses = (await manager.history(record.id)).map((h) => h.toStatus);
    expect(statuses).toEqual([
      "creating",
      "starting",
      "starting",
      "running",
      "stopping",
      "stopped",
      "resuming",
      "running",
      "stopping",
      "stopped",
      "resuming",
      "running",
    ]);
  });

  it("seeds files and reads/writes files with binary and hostile content", async () => {
    const { manager } = fixture();
    const binary = new Uint8Array(70_000).map((_, i) => (i * 31 + 7) % 256);
    const record = await manager.create({
      spec: {
        files: [
          { path: "seed/binary.bin", content: binary },
          { path: "seed/text.txt", content: HOSTILE.join("\n"), mode: 0o600 },
        ],
      },
    });
    expect(record.spec.files).toEqual([
      { path: "seed/binary.bin", size: 70_000 },
      { path: "seed/text.txt", size: Buffer.byteLength(HOSTILE.join("\n")), mode: 0o600 },
    ]);
    expect(JSON.stringify(record)).not.toContain(HOSTILE[4]);
    expect(await manager.readFile(record.id, "seed/binary.bin")).toEqual(binary);
    expect(await manager.readFile(record.id, "seed/text.txt", { encoding: "utf8" })).toBe(HOSTILE.join("\n"));
    expect((await manager.exec(record.id, ["stat", "-c", "%a", "seed/text.txt"])).stdout.trim()).toBe("600");

    await manager.writeFiles(record.id, {
      "dir with space/it's.txt": "quoted 'name'",
      [`${record.runtime.workdir}/abs.txt`]: "absolute",
    });
    expect(await manager.readFile(record.id, "dir with space/it's.txt", { encoding: "utf8" })).toBe(
      "quoted 'name'",
    );
    expect(await manager.readFile(record.id, "abs.txt", { encoding: "utf8" })).toBe("absolute");
    expect((await rejection(manager.readFile(record.id, "missing.txt"))).code).toBe("NotFound");
    expect((await rejection(manager.writeFiles(record.id, [{ path: "x", content: 1 as never }]))).code).toBe(
      "Validation",
    );
  });
});
