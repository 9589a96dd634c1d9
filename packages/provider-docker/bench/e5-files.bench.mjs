#!/usr/bin/env node
/**
 * E5 (files over exec) on Docker in primitives-only mode — the path every cloud with only a buffered exec
 * takes — against raw dockerode putArchive/getArchive on the same container, in the same run. Rotated
 * order, many rounds; prints medians with their interquartile range, MB/s, and the ratio sbox / raw.
 * Also shows what the exec transport itself carries (`cat` with 20 MB on stdin, and to stdout). Not a
 * test: it asserts nothing about time; it fails only when bytes come back wrong.
 *
 *   pnpm --filter @sbox/core --filter @sbox/provider-docker build && node packages/provider-docker/bench/e5-files.bench.mjs
 *
 * Environment: SBOX_BENCH_IMAGE (default sbox-busybox:latest), SBOX_BENCH_ROUNDS (default 12),
 * SBOX_BENCH_MB (default 20).
 */
import { createHash, randomBytes } from "node:crypto";
import { createSandboxClient } from "@sbox/core";
import Docker from "dockerode";
import { printComparison, rotatedRounds, summarize } from "../../../scripts/bench-rounds.mjs";
import { docker } from "../dist/index.js";
import { rawRead, rawRun, rawWrite, removeLabelled } from "./raw-dockerode.mjs";

const IMAGE = process.env.SBOX_BENCH_IMAGE ?? "sbox-busybox:latest";
const ROUNDS = Number(process.env.SBOX_BENCH_ROUNDS ?? 12);
const SIZE = Number(process.env.SBOX_BENCH_MB ?? 20) * 1_000_000;
const LABEL = `sbox.bench=${process.pid}`;

const raw = new Docker();
const provider = docker({ image: IMAGE, labels: { "sbox.bench": String(process.pid) } });
const client = createSandboxClient({ provider, primitivesOnly: true });
const sha = (bytes) => createHash("sha256").update(bytes).digest("hex");

try {
  const sandbox = await client.create({});
  const container = sandbox.raw();
  const data = randomBytes(SIZE);
  const expected = sha(data);
  await rawWrite(container, "/tmp", "raw.bin", data);
  const check = (bytes, what) => {
    if (sha(bytes) !== expected) throw new Error(`${what} returned different bytes`);
  };
  const samples = await rotatedRounds(
    {
      rawPut: () => rawWrite(container, "/tmp", "raw.bin", data),
      e5Write: () => sandbox.files.write("/tmp/e5.bin", data),
      rawGet: async () => {
        const started = performance.now();
        check(await rawRead(container, "/tmp/raw.bin"), "getArchive");
        return performance.now() - started;
      },
      e5Read: async () => {
        const started = performance.now();
        const bytes = await sandbox.files.read("/tmp/e5.bin");
        const ms = performance.now() - started;
        check(bytes, "files.read");
        return ms;
      },
      execStdin: () => rawRun(container, ["sh", "-c", "cat > /tmp/cat.bin"], data),
      execStdout: () => rawRun(container, ["cat", "/tmp/raw.bin"]),
    },
    { rounds: ROUNDS, warmup: 1 },
  );
  const s = Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, summarize(values)]));
  const mbps = (summary) => {
    const rate = (ms) => SIZE / 1e6 / (ms / 1000);
    return { median: rate(summary.median), p25: rate(summary.p75), p75: rate(summary.p25) };
  };
  const version = (await raw.version()).Version;
  printComparison(
    `E5 over docker exec (primitives-only), ${SIZE / 1e6} MB, ${ROUNDS} rounds, Docker ${version}, image ${IMAGE}, Node ${process.version}`,
    "raw dockerode",
    "sbox E5",
    [
      {
        name: "write: putArchive vs files.write (ms)",
        a: s.rawPut,
        b: s.e5Write,
        unit: "ms",
        ratioName: "x raw time",
      },
      {
        name: "write throughput (MB/s)",
        a: mbps(s.rawPut),
        b: mbps(s.e5Write),
        unit: "MB/s",
        ratio: s.rawPut.median / s.e5Write.median,
        ratioName: "x raw",
      },
      {
        name: "read: getArchive vs files.read (ms)",
        a: s.rawGet,
        b: s.e5Read,
        unit: "ms",
        ratioName: "x raw time",
      },
      {
        name: "read throughput (MB/s)",
        a: mbps(s.rawGet),
        b: mbps(s.e5Read),
        unit: "MB/s",
        ratio: s.rawGet.median / s.e5Read.median,
        ratioName: "x raw",
      },
      {
        name: "exec transport: stdin cat vs files.write (ms)",
        a: s.execStdin,
        b: s.e5Write,
        unit: "ms",
        ratioName: "x raw time",
      },
      {
        name: "exec transport: stdout cat vs files.read (ms)",
        a: s.execStdout,
        b: s.e5Read,
        unit: "ms",
        ratioName: "x raw time",
      },
    ],
  );
  await sandbox.destroy();
} finally {
  await client.dispose();
  await removeLabelled(raw, LABEL);
}
