#!/usr/bin/env node
import { createSandboxClient } from "@sbox/core";
/**
 * E3 (streaming emulated over the buffered exec, one poller per sandbox) on Docker in primitives-only mode,
 * against a native streaming exec of raw dockerode (hijacked stream) on the same container, in the same
 * run: the time from the call to the first stdout chunk, and the total time of `echo a; sleep 2; echo b`.
 * sbox in normal mode (native doExecStream) is shown as a third column's worth of rows. Rotated order, many
 * rounds; prints medians with their interquartile range and the ratio sbox / raw. Not a test: it asserts
 * nothing about time; it fails only when the output is wrong.
 *
 *   pnpm --filter @sbox/core --filter @sbox/provider-docker build && node packages/provider-docker/bench/e3-streaming.bench.mjs
 *
 * Environment: SBOX_BENCH_IMAGE (default sbox-busybox:latest), SBOX_BENCH_ROUNDS (default 10).
 */
import Docker from "dockerode";
import { printComparison, rotatedRounds, summarize } from "../../../scripts/bench-rounds.mjs";
import { docker } from "../dist/index.js";
import { rawRun, removeLabelled } from "./raw-dockerode.mjs";

const IMAGE = process.env.SBOX_BENCH_IMAGE ?? "sbox-busybox:latest";
const ROUNDS = Number(process.env.SBOX_BENCH_ROUNDS ?? 10);
const LABEL = `sbox.bench=${process.pid}`;
const SCRIPT = "echo a; sleep 2; echo b";

const raw = new Docker();
const provider = docker({ image: IMAGE, labels: { "sbox.bench": String(process.pid) } });
const emulated = createSandboxClient({ provider, primitivesOnly: true });
const native = createSandboxClient({ provider });

/** Runs SCRIPT through a facade; returns the first-chunk and total milliseconds. */
async function viaSbox(sandbox) {
  const started = performance.now();
  let firstMs;
  const result = await sandbox.commands.run(SCRIPT, {
    onStdout: () => {
      firstMs ??= performance.now() - started;
    },
  });
  const totalMs = performance.now() - started;
  if (result.stdout !== "a\nb\n" || result.exitCode !== 0) {
    throw new Error(`unexpected result ${JSON.stringify(result)}`);
  }
  return { firstMs, totalMs };
}

async function viaRaw(container) {
  const started = performance.now();
  const result = await rawRun(container, ["sh", "-c", SCRIPT]);
  const totalMs = performance.now() - started;
  if (result.stdout.toString() !== "a\nb\n" || result.exitCode !== 0) throw new Error("raw exec went wrong");
  return { firstMs: result.firstMs, totalMs };
}

try {
  const sandbox = await emulated.create({});
  const nativeSandbox = await native.connect(sandbox.id);
  if (sandbox.capabilities.map.streaming !== "emulated") {
    throw new Error(`primitives-only streaming is ${sandbox.capabilities.map.streaming}, not emulated`);
  }
  const container = sandbox.raw();
  const firsts = { raw: [], e3: [], native: [] };
  const samples = await rotatedRounds(
    {
      raw: async () => {
        const r = await viaRaw(container);
        firsts.raw.push(r.firstMs);
        return r.totalMs;
      },
      e3: async () => {
        const r = await viaSbox(sandbox);
        firsts.e3.push(r.firstMs);
        return r.totalMs;
      },
      native: async () => {
        const r = await viaSbox(nativeSandbox);
        firsts.native.push(r.firstMs);
        return r.totalMs;
      },
    },
    { rounds: ROUNDS, warmup: 1 },
  );
  // The warm-up round pushed one first-chunk sample per variant: drop it, as rotatedRounds dropped its time.
  for (const list of Object.values(firsts)) list.shift();
  const s = Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, summarize(values)]));
  const f = Object.fromEntries(Object.entries(firsts).map(([name, values]) => [name, summarize(values)]));
  const version = (await raw.version()).Version;
  printComparison(
    `E3 on docker (primitives-only) vs a native streaming exec of raw dockerode, \`${SCRIPT}\`, ${ROUNDS} rounds, Docker ${version}, image ${IMAGE}, Node ${process.version}`,
    "raw dockerode",
    "sbox",
    [
      { name: "first chunk, E3 (ms)", a: f.raw, b: f.e3, unit: "ms", ratioName: "x raw" },
      { name: "total, E3 (ms)", a: s.raw, b: s.e3, unit: "ms", ratioName: "x raw" },
      {
        name: "first chunk, native doExecStream (ms)",
        a: f.raw,
        b: f.native,
        unit: "ms",
        ratioName: "x raw",
      },
      { name: "total, native doExecStream (ms)", a: s.raw, b: s.native, unit: "ms", ratioName: "x raw" },
    ],
  );
  await sandbox.destroy();
} finally {
  await emulated.dispose();
  await native.dispose();
  await removeLabelled(raw, LABEL);
}
