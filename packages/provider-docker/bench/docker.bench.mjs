#!/usr/bin/env node
/**
 * Benchmarks @sbox/provider-docker against raw dockerode in the same run, on the same engine:
 * create+start, run("true") round trip, 50 MiB write and read. Not a test: it prints a table of medians
 * and ratios (sbox / raw; for throughput, sbox / raw as well, higher is better).
 *
 *   pnpm --filter @sbox/provider-docker build && node packages/provider-docker/bench/docker.bench.mjs
 *
 * Environment: SBOX_BENCH_IMAGE (default sbox-busybox:latest), SBOX_BENCH_RUNS (exec round trips, 100).
 */
import { randomBytes } from "node:crypto";
import Docker from "dockerode";
import { docker as dockerProvider } from "../dist/index.js";
import { rawCreate, rawRead, rawRun, rawWrite, removeLabelled } from "./raw-dockerode.mjs";

const IMAGE = process.env.SBOX_BENCH_IMAGE ?? "sbox-busybox:latest";
const EXEC_RUNS = Number(process.env.SBOX_BENCH_RUNS ?? 100);
const CREATE_RUNS = 8;
const FILE_RUNS = 6;
const FILE_SIZE = 50 * 1024 * 1024;
const LABELS = { "sbox.bench": String(process.pid) };

const raw = new Docker();
const provider = dockerProvider({ image: IMAGE, labels: LABELS });
const signal = () => ({ signal: AbortSignal.timeout(120_000) });

let createSandboxClient;
try {
  ({ createSandboxClient } = await import("@sbox/core"));
} catch (error) {
  console.warn(`@sbox/core has no built client (${error.message}); facade rows are skipped`);
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function time(fn) {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** Runs `a` and `b` alternately so drift (caches, other load) hits both alike. */
async function pair(runs, a, b, warmup = 2) {
  for (let i = 0; i < warmup; i++) {
    await a();
    await b();
  }
  const ta = [];
  const tb = [];
  for (let i = 0; i < runs; i++) {
    if (i % 2 === 0) {
      ta.push(await time(a));
      tb.push(await time(b));
    } else {
      tb.push(await time(b));
      ta.push(await time(a));
    }
  }
  return [median(ta), median(tb)];
}

const rows = [];
function row(name, rawMs, sboxMs, bytes) {
  const entry = { name, rawMs, sboxMs };
  if (bytes) {
    entry.rawMiBs = bytes / 1048576 / (rawMs / 1000);
    entry.sboxMiBs = bytes / 1048576 / (sboxMs / 1000);
  }
  rows.push(entry);
}

const cleanup = [];
try {
  // create + start
  const created = [];
  const [createRaw, createSbox] = await pair(
    CREATE_RUNS,
    async () => created.push({ raw: await rawCreate(raw, IMAGE, LABELS) }),
    async () => created.push({ sbox: await provider.doCreate({}, signal()) }),
    1,
  );
  row("create + start", createRaw, createSbox);
  for (const c of created) {
    if (c.raw) await c.raw.remove({ force: true });
    else await provider.doDestroy(c.sbox, signal());
  }

  // One sandbox for the rest: raw calls go to the same container through its dockerode object.
  const sandbox = await provider.doCreate({}, signal());
  const container = sandbox.native;
  cleanup.push(container);

  const [execRaw, execSbox] = await pair(
    EXEC_RUNS,
    () => rawRun(container, ["sh", "-c", "true"]),
    () => provider.doExec(sandbox, { command: { shell: "true" }, ...signal() }),
    5,
  );
  row('exec "true" (driver doExec)', execRaw, execSbox);

  let client;
  let facade;
  if (createSandboxClient) {
    client = createSandboxClient({ provider });
    facade = await client.connect(sandbox.id);
    const [runRaw, runSbox] = await pair(
      EXEC_RUNS,
      () => rawRun(container, ["sh", "-c", "true"]),
      () => facade.commands.run("true"),
      5,
    );
    row('run("true") (Sandbox facade)', runRaw, runSbox);
  }

  const data = randomBytes(FILE_SIZE);
  const [writeRaw, writeSbox] = await pair(
    FILE_RUNS,
    () => rawWrite(container, "/tmp", "raw.bin", data),
    () => provider.doWriteFile(sandbox, "/tmp/sbox.bin", data, { ...signal(), mode: 0o644 }),
    1,
  );
  row("write 50 MiB (driver)", writeRaw, writeSbox, FILE_SIZE);
  const [readRaw, readSbox] = await pair(
    FILE_RUNS,
    () => rawRead(container, "/tmp/raw.bin"),
    () => provider.doReadFile(sandbox, "/tmp/sbox.bin", signal()),
    1,
  );
  row("read 50 MiB (driver)", readRaw, readSbox, FILE_SIZE);
  if (facade) {
    const [fwRaw, fwSbox] = await pair(
      FILE_RUNS,
      () => rawWrite(container, "/tmp", "raw.bin", data),
      () => facade.files.write("/tmp/facade.bin", data),
      1,
    );
    row("files.write 50 MiB (facade)", fwRaw, fwSbox, FILE_SIZE);
    const [frRaw, frSbox] = await pair(
      FILE_RUNS,
      () => rawRead(container, "/tmp/raw.bin"),
      () => facade.files.read("/tmp/facade.bin"),
      1,
    );
    row("files.read 50 MiB (facade)", frRaw, frSbox, FILE_SIZE);
    await client.dispose();
  }
} finally {
  for (const c of cleanup) await c.remove({ force: true }).catch(() => undefined);
  await removeLabelled(raw, `sbox.bench=${process.pid}`);
}

const pad = (s, n) => String(s).padEnd(n);
const num = (v) => (v === undefined ? "" : v.toFixed(1));
console.log(`\nDocker ${(await raw.version()).Version}, image ${IMAGE}, node ${process.version}; medians`);
console.log(
  `${pad("operation", 32)}${pad("raw ms", 10)}${pad("sbox ms", 10)}${pad("sbox/raw", 10)}${pad("raw MiB/s", 11)}${pad("sbox MiB/s", 12)}throughput`,
);
for (const r of rows) {
  const ratio = r.sboxMs / r.rawMs;
  const throughput = r.rawMiBs ? `${((r.sboxMiBs / r.rawMiBs) * 100).toFixed(0)}% of raw` : "";
  console.log(
    `${pad(r.name, 32)}${pad(num(r.rawMs), 10)}${pad(num(r.sboxMs), 10)}${pad(ratio.toFixed(3), 10)}${pad(num(r.rawMiBs), 11)}${pad(num(r.sboxMiBs), 12)}${throughput}`,
  );
}
