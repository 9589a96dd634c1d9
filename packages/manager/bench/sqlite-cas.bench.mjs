#!/usr/bin/env node
/**
 * SQLite compare-and-set: the store's `update` (a CAS on the version plus its history entry, in one
 * IMMEDIATE transaction) against the raw loop a careful better-sqlite3 user writes (the same two
 * statements prepared once, the same transaction), on two files of the same schema, in the same run.
 * Rotated order, many rounds; prints the median and interquartile range per operation and the ratio of
 * throughputs (store / raw, higher is better). Not a test: it asserts nothing about time.
 *
 *   pnpm --filter @sbox/manager build && node packages/manager/bench/sqlite-cas.bench.mjs [rounds] [ops]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { printComparison, rotatedRounds, summarize } from "../../../scripts/bench-rounds.mjs";
import { sqliteStore } from "../dist/index.js";

const ROUNDS = Number(process.argv[2] ?? 30);
const OPS = Number(process.argv[3] ?? 300);
const RECORDS = 100;

function record(i) {
  const at = new Date(Date.UTC(2030, 0, 1) + i);
  return {
    id: `sbx_bench_${String(i).padStart(6, "0")}`,
    version: 1,
    status: "running",
    provider: "local",
    sandboxId: `local:${i}`,
    ownerId: `owner-${i % 10}`,
    labels: { team: `t${i % 5}`, job: String(i) },
    metadata: { n: i },
    spec: { setup: ["npm ci"], start: "npm start" },
    lease: null,
    error: null,
    runtime: { workdir: "/workspace" },
    createdAt: at,
    updatedAt: at,
    expiresAt: null,
  };
}

const entry = (r, from) => ({
  recordId: r.id,
  version: r.version,
  kind: from === null ? "create" : "transition",
  fromStatus: from,
  toStatus: r.status,
  actor: "bench",
  at: r.updatedAt,
  detail: null,
});

const flip = (status) => (status === "running" ? "stopped" : "running");
const next = (r) => ({
  ...r,
  status: flip(r.status),
  version: r.version + 1,
  updatedAt: new Date(r.updatedAt.getTime() + 1),
});

const dir = mkdtempSync(join(tmpdir(), "sbox-sqlite-cas-bench-"));
try {
  const store = sqliteStore({ path: join(dir, "store.db") });
  const rawPath = join(dir, "raw.db");
  // The raw file gets the same schema through a store of its own, then is driven by hand.
  const seed = sqliteStore({ path: rawPath });
  const storeRecords = Array.from({ length: RECORDS }, (_, i) => record(i));
  const rawRecords = Array.from({ length: RECORDS }, (_, i) => record(i));
  for (const r of storeRecords) await store.insert(r, entry(r, null));
  for (const r of rawRecords) await seed.insert(r, entry(r, null));
  await seed.close();

  const db = new Database(rawPath, { timeout: 10_000 });
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  const update = db.prepare(
    "UPDATE sbox_sandboxes SET version = @version, status = @status, provider = @provider, sandbox_id = @sandbox_id, owner_id = @owner_id, labels = @labels, metadata = @metadata, spec = @spec, lease_owner = @lease_owner, lease_expires_at = @lease_expires_at, error = @error, runtime = @runtime, created_at = @created_at, updated_at = @updated_at, expires_at = @expires_at WHERE id = @id AND version = @expected",
  );
  const history = db.prepare(
    "INSERT INTO sbox_sandbox_history (record_id, version, kind, from_status, to_status, actor, at, detail) VALUES (@record_id, @version, @kind, @from_status, @to_status, @actor, @at, @detail)",
  );
  const cas = db.transaction((row, item) => {
    if (update.run(row).changes !== 1) return false;
    history.run(item);
    return true;
  });
  // The same row building the store does: JSON columns, epoch milliseconds.
  const rawCas = (expected, r, e) =>
    cas.immediate(
      {
        id: r.id,
        version: r.version,
        status: r.status,
        provider: r.provider,
        sandbox_id: r.sandboxId,
        owner_id: r.ownerId,
        labels: JSON.stringify(r.labels),
        metadata: JSON.stringify(r.metadata),
        spec: JSON.stringify(r.spec),
        lease_owner: null,
        lease_expires_at: null,
        error: null,
        runtime: JSON.stringify(r.runtime),
        created_at: r.createdAt.getTime(),
        updated_at: r.updatedAt.getTime(),
        expires_at: null,
        expected,
      },
      {
        record_id: e.recordId,
        version: e.version,
        kind: e.kind,
        from_status: e.fromStatus,
        to_status: e.toStatus,
        actor: e.actor,
        at: e.at.getTime(),
        detail: e.detail,
      },
    );

  let storeAt = 0;
  let rawAt = 0;
  const samples = await rotatedRounds(
    {
      raw: async () => {
        const started = performance.now();
        for (let i = 0; i < OPS; i++) {
          const index = rawAt++ % RECORDS;
          const r = rawRecords[index];
          const n = next(r);
          if (!rawCas(r.version, n, entry(n, r.status))) throw new Error("raw CAS missed");
          rawRecords[index] = n;
        }
        return ((performance.now() - started) * 1000) / OPS;
      },
      store: async () => {
        const started = performance.now();
        for (let i = 0; i < OPS; i++) {
          const index = storeAt++ % RECORDS;
          const r = storeRecords[index];
          const n = next(r);
          if (!(await store.update(r.version, n, entry(n, r.status)))) throw new Error("store CAS missed");
          storeRecords[index] = n;
        }
        return ((performance.now() - started) * 1000) / OPS;
      },
    },
    { rounds: ROUNDS, warmup: 2 },
  );
  db.close();
  await store.close();
  const raw = summarize(samples.raw);
  const sbox = summarize(samples.store);
  printComparison(
    `SQLite CAS (update + history, IMMEDIATE transaction), ${ROUNDS} rounds x ${OPS} ops, Node ${process.version}`,
    "raw better-sqlite3",
    "sqliteStore().update",
    [
      {
        name: "µs per CAS",
        a: raw,
        b: sbox,
        unit: "µs",
        ratio: raw.median / sbox.median,
        ratioName: "x raw throughput",
      },
    ],
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
