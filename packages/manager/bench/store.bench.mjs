// Store operations per second, SQLite and PostgreSQL (a benchmark, not a test: it prints, it asserts nothing).
//
//   pnpm --filter @sbox/manager build && node packages/manager/bench/store.bench.mjs [count]
//
// PostgreSQL: SBOX_TEST_POSTGRES_URL, or a throwaway cluster started (and stopped) by scripts/start-postgres.sh.
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { postgresStore, sqliteStore } from "../dist/index.js";

const COUNT = Number(process.argv[2] ?? 2000);
const CONCURRENCY = 16;
const scripts = fileURLToPath(new URL("../scripts/", import.meta.url));

function record(i) {
  const at = new Date(Date.UTC(2030, 0, 1) + i);
  return {
    id: `sbx_${randomUUID().replaceAll("-", "")}`,
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

function entry(r, from) {
  return {
    recordId: r.id,
    version: r.version,
    kind: from === null ? "create" : "transition",
    fromStatus: from,
    toStatus: r.status,
    actor: "bench",
    at: r.updatedAt,
    detail: null,
  };
}

const flip = (status) => (status === "running" ? "stopped" : "running");

async function timed(label, n, work) {
  const started = process.hrtime.bigint();
  await work();
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  return { label, n, ms, perSecond: Math.round((n / ms) * 1000) };
}

async function pool(items, concurrency, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

async function measure(name, store) {
  await store.init();
  const records = Array.from({ length: COUNT }, (_, i) => record(i));
  const results = [];
  results.push(
    await timed("insert (create)", COUNT, async () => {
      for (const r of records) await store.insert(r, entry(r, null));
    }),
  );
  results.push(
    await timed("get", COUNT, async () => {
      for (let i = 0; i < COUNT; i++) await store.get(records[(i * 7919) % COUNT].id);
    }),
  );
  const current = new Map(records.map((r) => [r.id, r]));
  const transition = async (id) => {
    const r = current.get(id);
    const next = {
      ...r,
      status: flip(r.status),
      version: r.version + 1,
      updatedAt: new Date(r.updatedAt.getTime() + 1),
    };
    if (!(await store.update(r.version, next, entry(next, r.status)))) throw new Error("unexpected CAS miss");
    current.set(id, next);
  };
  results.push(
    await timed("CAS transition", COUNT, async () => {
      for (const r of records) await transition(r.id);
    }),
  );
  results.push(
    await timed(`CAS transition, ${CONCURRENCY} in flight`, COUNT, async () => {
      await pool(
        records.map((r) => r.id),
        CONCURRENCY,
        transition,
      );
    }),
  );
  // Many writers racing for the same record: every round exactly one wins.
  const hot = records[0].id;
  let wins = 0;
  const rounds = Math.max(50, Math.floor(COUNT / 20));
  results.push(
    await timed(`contended CAS (${CONCURRENCY} writers, 1 record), winners`, rounds, async () => {
      for (let round = 0; round < rounds; round++) {
        const r = current.get(hot);
        const next = {
          ...r,
          status: flip(r.status),
          version: r.version + 1,
          updatedAt: new Date(r.updatedAt.getTime() + 1),
        };
        const outcomes = await Promise.all(
          Array.from({ length: CONCURRENCY }, () => store.update(r.version, next, entry(next, r.status))),
        );
        const won = outcomes.filter(Boolean).length;
        if (won !== 1) throw new Error(`round ${round}: ${won} winners`);
        wins += won;
        current.set(hot, next);
      }
    }),
  );
  results.push(
    await timed("list by label (100 rows each)", 200, async () => {
      for (let i = 0; i < 200; i++) await store.list({ labels: { team: `t${i % 5}` }, limit: 100 });
    }),
  );
  await store.close();
  if (wins !== rounds) throw new Error("lost a contended round");
  return { name, results };
}

let pgDir;
let pgUrl = process.env.SBOX_TEST_POSTGRES_URL;
if (!pgUrl) {
  const out = execFileSync("bash", [`${scripts}start-postgres.sh`, "--owner-pid", String(process.pid)], {
    encoding: "utf8",
  });
  pgUrl = /SBOX_TEST_POSTGRES_URL='([^']+)'/.exec(out)[1];
  pgDir = /SBOX_TEST_POSTGRES_DIR='([^']+)'/.exec(out)[1];
}
const dir = mkdtempSync(join(tmpdir(), "sbox-manager-bench-"));
try {
  const sqlite = await measure("SQLite (WAL, file)", sqliteStore({ path: join(dir, "bench.db") }));
  const schema = `bench_${randomUUID().replaceAll("-", "")}`;
  const postgres = await measure(
    "PostgreSQL (loopback, pool of 16)",
    postgresStore({ connectionString: pgUrl, schema, maxConnections: CONCURRENCY }),
  );
  const pg = await import("pg");
  const admin = new pg.default.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  await admin.end();

  console.log(`store operations per second (${COUNT} records, Node ${process.version})\n`);
  console.log(`| operation | ${sqlite.name} | ${postgres.name} | SQLite / PostgreSQL |`);
  console.log("|---|---:|---:|---:|");
  for (let i = 0; i < sqlite.results.length; i++) {
    const a = sqlite.results[i];
    const b = postgres.results[i];
    console.log(
      `| ${a.label} | ${a.perSecond.toLocaleString("en-US")} | ${b.perSecond.toLocaleString("en-US")} | ${(a.perSecond / b.perSecond).toFixed(1)}x |`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  if (pgDir) execFileSync("bash", [`${scripts}stop-postgres.sh`, pgDir], { stdio: "ignore" });
}
