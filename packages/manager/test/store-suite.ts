/**
 * The one store test suite, run against every store (memory, SQLite, PostgreSQL) from a one-line test file.
 * What differs between stores is declared by the factory (`sharedBacking`), never by the test.
 */
import { randomUUID } from "node:crypto";
import { SandboxError } from "@sbox/core/spec";
import { afterEach, describe, expect, it } from "vitest";
import type { HistoryEntry, SandboxRecord, SandboxStatus } from "../src/sandbox-record.js";
import type { SandboxStore } from "../src/sandbox-store.js";

/** What a store test file hands the suite. */
export interface StoreFactory {
  /** Opens a store on a fresh, empty backing (a new file, a new schema). */
  fresh(): Promise<StoreHandle>;
}

/** A fresh backing and the ability to open more stores on it. */
export interface StoreHandle {
  store: SandboxStore;
  /** Opens another store instance on the same backing, or undefined when the store cannot (memory). */
  another(): SandboxStore | undefined;
  /** Deletes the backing. */
  cleanup(): Promise<void>;
}

export const HOSTILE: readonly string[] = [
  `it's "quoted"`,
  "new\nline\r\n",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal shell expansion is the point
  "$(rm -rf /) `whoami` ${HOME}",
  "; DROP TABLE sbox_sandboxes; --",
  "unicode: héllo wörld ✓ 🚀 中文",
  "back\\slash and 'single' and \"double\"",
  "%_ like wildcards %",
  "",
];

let clock = Date.UTC(2030, 0, 1);
/** A record with every field set; `overrides` replace fields. */
export function makeRecord(overrides: Partial<SandboxRecord> = {}): SandboxRecord {
  clock += 1000;
  const at = new Date(clock);
  return {
    id: `sbx_${randomUUID()}`,
    version: 1,
    status: "creating",
    provider: "test",
    sandboxId: null,
    ownerId: "owner-1",
    labels: { team: "infra" },
    metadata: { nested: { list: [1, "two", null, true] } },
    spec: { template: "alpine", setup: ["echo hi"], env: { A: "b" } },
    lease: { owner: "worker-1", expiresAt: new Date(clock + 30_000) },
    error: null,
    runtime: {},
    createdAt: at,
    updatedAt: at,
    expiresAt: null,
    ...overrides,
  };
}

/** The history row that goes with a change to `record`. */
export function entryFor(
  record: SandboxRecord,
  fromStatus: SandboxStatus | null,
  kind: HistoryEntry["kind"] = fromStatus === null ? "create" : "transition",
): HistoryEntry {
  return {
    recordId: record.id,
    version: record.version,
    kind,
    fromStatus,
    toStatus: record.status,
    actor: "worker-1",
    at: record.updatedAt,
    detail: `to ${record.status}`,
  };
}

/** The next version of a record with changes. */
export function nextOf(record: SandboxRecord, changes: Partial<SandboxRecord>): SandboxRecord {
  return {
    ...record,
    ...changes,
    version: record.version + 1,
    updatedAt: new Date(record.updatedAt.getTime() + 1),
  };
}

async function insert(store: SandboxStore, overrides: Partial<SandboxRecord> = {}): Promise<SandboxRecord> {
  const record = makeRecord(overrides);
  await store.insert(record, entryFor(record, null));
  return record;
}

async function rejection(promise: Promise<unknown>): Promise<SandboxError> {
  try {
    await promise;
  } catch (error) {
    if (SandboxError.isInstance(error)) return error;
    throw new Error(`expected a SandboxError, got ${String(error)}`);
  }
  throw new Error("expected a rejection");
}

/** Registers the shared store suite under `name`. */
export function storeSuite(name: string, factory: StoreFactory): void {
  describe(`store suite: ${name}`, () => {
    const handles: StoreHandle[] = [];
    const open = async (): Promise<StoreHandle> => {
      const handle = await factory.fresh();
      handles.push(handle);
      await handle.store.init();
      return handle;
    };
    afterEach(async () => {
      for (const handle of handles.splice(0)) await handle.cleanup();
    });

    it("round-trips every field of a record, dates and nested JSON included", async () => {
      const { store } = await open();
      const record = makeRecord({
        sandboxId: "test:abc",
        runtime: { workdir: "/w", startPid: 42, urls: { "3000": "http://127.0.0.1:3000" } },
        expiresAt: new Date(Date.UTC(2031, 5, 1, 12, 0, 0, 123)),
        error: {
          code: "SetupFailed",
          message: "boom",
          step: { index: 1, name: "npm i" },
          exitCode: 2,
          outputTail: "x",
          at: new Date(5),
        },
      });
      await store.insert(record, entryFor(record, null));
      expect(await store.get(record.id)).toEqual(record);
    });

    it("keeps hostile strings intact in labels, owner, metadata and spec", async () => {
      const { store } = await open();
      const labels = Object.fromEntries(
        HOSTILE.map((value, i) => [`k${i}.${value.slice(0, 3).replace(/\W/g, "")}`, value]),
      );
      labels[`key with "quotes" and $.path`] = "v";
      const record = await insert(store, {
        ownerId: HOSTILE[2]!,
        labels,
        metadata: { hostile: HOSTILE },
        spec: { setup: HOSTILE.filter((s) => s.length > 0), env: { X: HOSTILE[0]! } },
      });
      expect(await store.get(record.id)).toEqual(record);
      for (const [key, value] of Object.entries(labels)) {
        const found = await store.list({ labels: { [key]: value } });
        expect(found.map((r) => r.id)).toEqual([record.id]);
      }
      expect(await store.list({ ownerId: HOSTILE[2]! })).toHaveLength(1);
    });

    it("stores a large record (1 MiB of metadata)", async () => {
      const { store } = await open();
      const big = "x".repeat(1024 * 1024);
      const record = await insert(store, { metadata: { big } });
      expect((await store.get(record.id))?.metadata.big).toBe(big);
    });

    it("returns copies: mutating a result does not change the store", async () => {
      const { store } = await open();
      const record = await insert(store);
      const got = (await store.get(record.id))!;
      got.labels.team = "changed";
      got.status = "running";
      expect(await store.get(record.id)).toEqual(record);
    });

    it("rejects a second insert of the same id with Conflict and keeps the first", async () => {
      const { store } = await open();
      const record = await insert(store);
      const again = { ...record, ownerId: "someone-else" };
      const error = await rejection(store.insert(again, entryFor(again, null)));
      expect(error.code).toBe("Conflict");
      expect((await store.get(record.id))?.ownerId).toBe("owner-1");
      expect(await store.history(record.id)).toHaveLength(1);
    });

    it("answers undefined for a missing record and an empty history", async () => {
      const { store } = await open();
      expect(await store.get("sbx_missing")).toBeUndefined();
      expect(await store.history("sbx_missing")).toEqual([]);
    });

    it("updates when the version matches, and writes the history row with it", async () => {
      const { store } = await open();
      const record = await insert(store);
      const next = nextOf(record, { status: "starting", sandboxId: "test:1" });
      expect(await store.update(1, next, entryFor(next, "creating"))).toBe(true);
      expect(await store.get(record.id)).toEqual(next);
      const history = await store.history(record.id);
      expect(history.map((h) => [h.version, h.fromStatus, h.toStatus, h.kind])).toEqual([
        [1, null, "creating", "create"],
        [2, "creating", "starting", "transition"],
      ]);
      expect(history[1]).toEqual(entryFor(next, "creating"));
    });

    it("refuses a stale version: nothing changes, no history row", async () => {
      const { store } = await open();
      const record = await insert(store);
      const next = nextOf(record, { status: "starting" });
      expect(await store.update(1, next, entryFor(next, "creating"))).toBe(true);
      const stale = nextOf(record, { status: "failed" });
      expect(await store.update(1, stale, entryFor(stale, "creating"))).toBe(false);
      expect((await store.get(record.id))?.status).toBe("starting");
      expect(await store.history(record.id)).toHaveLength(2);
    });

    it("answers false when updating a record that does not exist", async () => {
      const { store } = await open();
      const ghost = nextOf(makeRecord(), { status: "running" });
      expect(await store.update(1, ghost, entryFor(ghost, "creating"))).toBe(false);
      expect(await store.get(ghost.id)).toBeUndefined();
      expect(await store.history(ghost.id)).toEqual([]);
    });

    it("rejects a write whose version does not follow the expected one", async () => {
      const { store } = await open();
      const record = await insert(store);
      const skipping = { ...record, version: 3 };
      expect((await rejection(store.update(1, skipping, entryFor(skipping, "creating")))).code).toBe(
        "Validation",
      );
      const badInsert = makeRecord({ version: 2 });
      expect((await rejection(store.insert(badInsert, entryFor(badInsert, null)))).code).toBe("Validation");
      expect(await store.get(badInsert.id)).toBeUndefined();
    });

    it("lets exactly one of many concurrent writers holding the same version win", async () => {
      const { store } = await open();
      const record = await insert(store);
      const attempts = Array.from({ length: 20 }, (_, i) => {
        const next = nextOf(record, { status: "running", ownerId: `writer-${i}` });
        return store.update(1, next, { ...entryFor(next, "creating"), actor: `writer-${i}` });
      });
      const results = await Promise.all(attempts);
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results.indexOf(true);
      expect((await store.get(record.id))?.ownerId).toBe(`writer-${winner}`);
      const history = await store.history(record.id);
      expect(history.map((h) => h.actor)).toEqual(["worker-1", `writer-${winner}`]);
    });

    it("filters by owner, labels, status, provider, sandbox id, expiry and ids; orders by creation", async () => {
      const { store } = await open();
      const a = await insert(store, {
        ownerId: "alice",
        labels: { env: "prod", team: "a" },
        status: "running",
        expiresAt: new Date(Date.UTC(2030, 1, 1)),
      });
      const b = await insert(store, {
        ownerId: "bob",
        labels: { env: "prod", team: "b" },
        status: "stopped",
        provider: "other",
        sandboxId: "other:1",
      });
      const c = await insert(store, {
        ownerId: "alice",
        labels: { env: "dev" },
        status: "destroyed",
        expiresAt: new Date(Date.UTC(2032, 1, 1)),
      });
      const ids = async (filter: Parameters<SandboxStore["list"]>[0]) =>
        (await store.list(filter)).map((r) => r.id);
      expect(await ids({})).toEqual([a.id, b.id, c.id]);
      expect(await ids(undefined)).toEqual([a.id, b.id, c.id]);
      expect(await ids({ ownerId: "alice" })).toEqual([a.id, c.id]);
      expect(await ids({ labels: { env: "prod" } })).toEqual([a.id, b.id]);
      expect(await ids({ labels: { env: "prod", team: "b" } })).toEqual([b.id]);
      expect(await ids({ labels: { env: "prod", team: "c" } })).toEqual([]);
      expect(await ids({ labels: { missing: "" } })).toEqual([]);
      expect(await ids({ status: "running" })).toEqual([a.id]);
      expect(await ids({ status: ["running", "destroyed"] })).toEqual([a.id, c.id]);
      expect(await ids({ status: [] })).toEqual([]);
      expect(await ids({ provider: "other" })).toEqual([b.id]);
      expect(await ids({ sandboxId: "other:1" })).toEqual([b.id]);
      expect(await ids({ expiresBefore: new Date(Date.UTC(2031, 0, 1)) })).toEqual([a.id]);
      expect(await ids({ expiresBefore: new Date(Date.UTC(2030, 1, 1)) })).toEqual([a.id]);
      expect(await ids({ ids: [c.id, a.id, "sbx_none"] })).toEqual([a.id, c.id]);
      expect(await ids({ ids: [] })).toEqual([]);
      expect(await ids({ ownerId: "alice", status: "running", labels: { team: "a" } })).toEqual([a.id]);
      expect(await ids({ limit: 2 })).toEqual([a.id, b.id]);
      expect(await ids({ limit: 0 })).toEqual([]);
    });

    it("rejects a filter it cannot honour with Validation, never ignoring it", async () => {
      const { store } = await open();
      for (const filter of [
        { color: "red" },
        { status: "sleeping" },
        { limit: -1 },
        { limit: 1.5 },
        { labels: { a: 1 } },
        { expiresBefore: "tomorrow" },
        { ids: "sbx_1" },
      ]) {
        const error = await rejection(store.list(filter as never));
        expect(error.code).toBe("Validation");
      }
    });

    it("keeps the history of every change in order", async () => {
      const { store } = await open();
      let record = await insert(store);
      const path: SandboxStatus[] = ["starting", "running", "stopping", "stopped", "resuming", "running"];
      for (const status of path) {
        const next = nextOf(record, { status });
        expect(await store.update(record.version, next, entryFor(next, record.status))).toBe(true);
        record = next;
      }
      const history = await store.history(record.id);
      expect(history.map((h) => h.version)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(history.map((h) => h.toStatus)).toEqual(["creating", ...path]);
      for (let i = 1; i < history.length; i++) expect(history[i]!.fromStatus).toBe(history[i - 1]!.toStatus);
    });

    it("fails with InvalidState after close", async () => {
      const handle = await open();
      await handle.store.close();
      expect((await rejection(handle.store.get("sbx_x"))).code).toBe("InvalidState");
    });

    it("shares records and compare-and-set between store instances on the same backing", async (context) => {
      const handle = await open();
      const other = handle.another();
      if (!other) return context.skip("this store has no shared backing");
      try {
        const record = await insert(handle.store);
        expect(await other.get(record.id)).toEqual(record);
        const mine = nextOf(record, { status: "starting" });
        const theirs = nextOf(record, { status: "failed" });
        const results = await Promise.all([
          handle.store.update(1, mine, entryFor(mine, "creating")),
          other.update(1, theirs, entryFor(theirs, "creating")),
        ]);
        expect(results.filter(Boolean)).toHaveLength(1);
        expect((await other.get(record.id))?.version).toBe(2);
        expect(await handle.store.history(record.id)).toHaveLength(2);
      } finally {
        await other.close();
      }
    });
  });
}
