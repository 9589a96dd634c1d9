#!/usr/bin/env node
import { createSandboxClient } from "@sbox/core";
/**
 * E4 (background processes emulated over the buffered exec) on Docker in primitives-only mode: the round
 * trip of `commands.run("true")` while 0, 5, 10 and 20 idle background processes (`sleep`) live in the
 * sandbox, each followed by its own `for await` reader as an agent would (one poller per sandbox serves
 * them all). A raw dockerode exec of `sh -c true` on the same container is measured in the same rounds as
 * the baseline. Per count: median and interquartile range, and the ratios against the run with none and
 * against raw. Not a test: it asserts nothing about time.
 *
 *   pnpm --filter @sbox/core --filter @sbox/provider-docker build && node packages/provider-docker/bench/e4-idle-background.bench.mjs
 *
 * Environment: SBOX_BENCH_IMAGE (default sbox-busybox:latest), SBOX_BENCH_ROUNDS (default 40 per count).
 */
import Docker from "dockerode";
import { printComparison, rotatedRounds, summarize } from "../../../scripts/bench-rounds.mjs";
import { docker } from "../dist/index.js";
import { rawRun, removeLabelled } from "./raw-dockerode.mjs";

const IMAGE = process.env.SBOX_BENCH_IMAGE ?? "sbox-busybox:latest";
const ROUNDS = Number(process.env.SBOX_BENCH_ROUNDS ?? 40);
const COUNTS = [0, 5, 10, 20];
const LABEL = `sbox.bench=${process.pid}`;

const raw = new Docker();
const provider = docker({ image: IMAGE, labels: { "sbox.bench": String(process.pid) } });
const client = createSandboxClient({ provider, primitivesOnly: true });

try {
  const sandbox = await client.create({});
  if (sandbox.capabilities.map.background !== "emulated") {
    throw new Error(`primitives-only background is ${sandbox.capabilities.map.background}, not emulated`);
  }
  const container = sandbox.raw();
  const processes = [];
  const readers = [];
  const results = [];
  for (const count of COUNTS) {
    while (processes.length < count) {
      const proc = await sandbox.commands.spawn("sleep 100000");
      processes.push(proc);
      // Follow its output, as an agent that waits for a server's log does: this is what keeps polling.
      readers.push(
        (async () => {
          for await (const _ of proc.stdout) {
            // idle processes print nothing
          }
        })().catch(() => undefined),
      );
    }
    // Let the poller settle into its idle interval before measuring.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const samples = await rotatedRounds(
      {
        raw: async () => {
          const started = performance.now();
          const r = await rawRun(container, ["sh", "-c", "true"]);
          if (r.exitCode !== 0) throw new Error("raw exec failed");
          return performance.now() - started;
        },
        sbox: async () => {
          const started = performance.now();
          const r = await sandbox.commands.run("true");
          if (r.exitCode !== 0) throw new Error("run failed");
          return performance.now() - started;
        },
      },
      { rounds: ROUNDS, warmup: 3 },
    );
    results.push({ count, raw: summarize(samples.raw), sbox: summarize(samples.sbox) });
  }
  const none = results[0].sbox;
  const version = (await raw.version()).Version;
  printComparison(
    `E4 on docker (primitives-only): run("true") with idle background processes, ${ROUNDS} rounds per count, Docker ${version}, image ${IMAGE}, Node ${process.version}`,
    "raw dockerode exec",
    "sbox run",
    results.map((r) => ({
      name: `${r.count} idle processes: sbox / raw (ms)`,
      a: r.raw,
      b: r.sbox,
      unit: "ms",
      ratioName: "x raw",
    })),
  );
  // The counts run one after another, so load that drifts between them moves their medians apart; the
  // last column divides each by the raw exec of its own rounds first, which cancels most of that drift.
  const noneVsRaw = none.median / results[0].raw.median;
  console.log(
    "\n| idle processes | sbox median (ms) | x median with none | x with none, each / its raw |\n|---:|---:|---:|---:|",
  );
  for (const r of results) {
    const normalized = r.sbox.median / r.raw.median / noneVsRaw;
    console.log(
      `| ${r.count} | ${r.sbox.median.toFixed(1)} | ${(r.sbox.median / none.median).toFixed(3)} | ${normalized.toFixed(3)} |`,
    );
  }
  for (const proc of processes) await proc.kill().catch(() => undefined);
  await Promise.all(readers);
  await sandbox.destroy();
} finally {
  await client.dispose();
  await removeLabelled(raw, LABEL);
}
