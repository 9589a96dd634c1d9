#!/usr/bin/env node
/**
 * Back-pressure: a `for await` consumer that sleeps 10 ms per event over 100 MB of command output. Each
 * variant runs in its own Node process (so its peak RSS is its own) with a 48 MB old-space heap, and
 * reports its peak RSS growth over the RSS before the command, the time, the event count and the sha256 of
 * what it received, which must equal `sha256sum` of the file inside the sandbox (all bytes, in order):
 *
 * - raw: raw dockerode, a hijacked exec of `cat`, the socket iterated with `for await` (a Node stream:
 *   it pauses the socket while the consumer sleeps) — the baseline;
 * The sbox variants pass `collectOutput: false` (else the result's `stdout` keeps every byte, by contract).
 *
 * - e3: sbox on docker in primitives-only mode (E3 over the buffered exec, one poller per sandbox);
 * - native: sbox on docker as declared (docker's streaming exec).
 *
 * Rotated order over rounds; prints medians with interquartile range and the growth against raw. Not a
 * test: it asserts nothing about time or memory; it fails only when the bytes differ.
 *
 *   pnpm --filter @sbox/core --filter @sbox/provider-docker build && node packages/provider-docker/bench/slow-consumer.bench.mjs
 *
 * Environment: SBOX_BENCH_IMAGE (default sbox-busybox:latest), SBOX_BENCH_ROUNDS (default 3),
 * SBOX_BENCH_MB (default 100), SBOX_BENCH_SLEEP_MS (default 10), SBOX_BENCH_VARIANTS (default
 * `raw,e3,native`: a subset measures one path at large sizes without waiting for the others).
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { PerformanceObserver } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { createSandboxClient } from "@sbox/core";
import Docker from "dockerode";
import { printComparison, rotatedRounds, summarize } from "../../../scripts/bench-rounds.mjs";
import { docker } from "../dist/index.js";
import { removeLabelled } from "./raw-dockerode.mjs";

const IMAGE = process.env.SBOX_BENCH_IMAGE ?? "sbox-busybox:latest";
const ROUNDS = Number(process.env.SBOX_BENCH_ROUNDS ?? 3);
const SIZE = Number(process.env.SBOX_BENCH_MB ?? 100) * 1_000_000;
const SLEEP_MS = Number(process.env.SBOX_BENCH_SLEEP_MS ?? 10);
const VARIANTS = (process.env.SBOX_BENCH_VARIANTS ?? "raw,e3,native").split(",");
const HEAP_MB = 48;
const FILE = "/tmp/slow-consumer.txt";
const MIB = 1024 * 1024;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Samples memory every 10 ms until stopped; returns the peaks of RSS, of the JS heap, of buffers
 * (`arrayBuffers`) and of everything outside the heap that V8 is told of (`external`: buffers and external
 * strings, such as the ones Node makes of large decoded text), and how many garbage collections ran.
 */
function memoryPeaks() {
  const peak = { rss: 0, heap: 0, buffers: 0, external: 0, gcs: 0 };
  const observer = new PerformanceObserver((list) => {
    peak.gcs += list.getEntries().length;
  });
  observer.observe({ entryTypes: ["gc"] });
  const sample = () => {
    const m = process.memoryUsage();
    peak.rss = Math.max(peak.rss, m.rss);
    peak.heap = Math.max(peak.heap, m.heapUsed);
    peak.buffers = Math.max(peak.buffers, m.arrayBuffers);
    peak.external = Math.max(peak.external, m.external);
  };
  sample();
  const timer = setInterval(sample, 10);
  return {
    stop() {
      clearInterval(timer);
      observer.disconnect();
      sample();
      return peak;
    },
  };
}

/** One variant, in a child process: prints one JSON line. */
async function child(variant, sandboxId, containerId) {
  const hash = createHash("sha256");
  let events = 0;
  let bytes = 0;
  let consume;
  let close = async () => undefined;
  if (variant === "raw") {
    const container = new Docker().getContainer(containerId);
    consume = async () => {
      const exec = await container.exec({ Cmd: ["cat", FILE], AttachStdout: true, AttachStderr: true });
      const stream = await exec.start({ hijack: true });
      let pending = Buffer.alloc(0);
      for await (const chunk of stream) {
        pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
        while (pending.length >= 8) {
          const size = pending.readUInt32BE(4);
          if (pending.length < 8 + size) break;
          if (pending[0] === 1) {
            const payload = pending.subarray(8, 8 + size);
            hash.update(payload);
            bytes += payload.length;
          }
          pending = pending.subarray(8 + size);
        }
        events++;
        await sleep(SLEEP_MS);
      }
    };
  } else {
    const provider = docker({ image: IMAGE });
    const client = createSandboxClient({ provider, primitivesOnly: variant === "e3" });
    const sandbox = await client.connect(sandboxId);
    close = () => client.dispose();
    consume = async () => {
      // The result's stdout would keep all 100 MB by contract: a streaming consumer opts out of it.
      for await (const event of sandbox.commands.run(["cat", FILE], { collectOutput: false })) {
        if (event.type === "stdout") {
          hash.update(event.data);
          bytes += Buffer.byteLength(event.data);
          events++;
          await sleep(SLEEP_MS);
        } else if (event.type === "exit" && event.exitCode !== 0) {
          throw new Error(`cat exited with ${event.exitCode}`);
        }
      }
    };
  }
  globalThis.gc?.();
  await sleep(200);
  const before = process.memoryUsage();
  const peaks = memoryPeaks();
  const started = performance.now();
  await consume();
  const ms = performance.now() - started;
  const peak = peaks.stop();
  const growth = (peak.rss - before.rss) / MIB;
  const heap = (peak.heap - before.heapUsed) / MIB;
  const buffers = (peak.buffers - before.arrayBuffers) / MIB;
  const external = (peak.external - before.external) / MIB;
  await close();
  const sha = hash.digest("hex");
  console.log(
    JSON.stringify({ variant, ms, growth, heap, buffers, external, gcs: peak.gcs, events, bytes, sha }),
  );
}

function runChild(variant, sandboxId, containerId) {
  return new Promise((resolve, reject) => {
    const node = spawn(
      process.execPath,
      [
        `--max-old-space-size=${HEAP_MB}`,
        "--expose-gc",
        fileURLToPath(import.meta.url),
        "--child",
        variant,
        sandboxId,
        containerId,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    node.stdout.on("data", (chunk) => {
      out += chunk;
    });
    node.on("error", reject);
    node.on("close", (code) => {
      if (code !== 0) reject(new Error(`${variant} exited with ${code}`));
      else resolve(JSON.parse(out.trim().split("\n").pop()));
    });
  });
}

async function main() {
  const label = `sbox.bench=${process.pid}`;
  const raw = new Docker();
  const provider = docker({ image: IMAGE, labels: { "sbox.bench": String(process.pid) } });
  const client = createSandboxClient({ provider });
  try {
    const sandbox = await client.create({});
    const containerId = sandbox.raw().id;
    // Text output (base64 of random bytes, 76-column lines), so events are strings of the same bytes.
    const made = await sandbox.commands.run(
      `head -c ${Math.ceil((SIZE * 3) / 4)} /dev/urandom | base64 > ${FILE} && sha256sum ${FILE} && wc -c < ${FILE}`,
    );
    if (made.exitCode !== 0) throw new Error(`preparing the file failed: ${made.stderr}`);
    const [line, count] = made.stdout.trim().split("\n");
    const expected = line.split(" ")[0];
    const total = Number(count);
    const results = { raw: [], e3: [], native: [] };
    const chosen = Object.keys(results).filter((variant) => VARIANTS.includes(variant));
    await rotatedRounds(
      Object.fromEntries(
        chosen.map((variant) => [
          variant,
          async () => {
            const r = await runChild(variant, sandbox.id, containerId);
            if (r.sha !== expected || r.bytes !== total) {
              throw new Error(
                `${variant}: ${r.bytes} bytes, sha256 ${r.sha}, expected ${total} and ${expected}`,
              );
            }
            results[variant].push(r);
            return r.ms;
          },
        ]),
      ),
      { rounds: ROUNDS, warmup: 0 },
    );
    const of = (variant, key) => summarize(results[variant].map((r) => r[key]));
    const version = (await raw.version()).Version;
    printComparison(
      `Slow for-await consumer (${SLEEP_MS} ms per event) over ${(total / 1e6).toFixed(0)} MB of output, heap ${HEAP_MB} MB, ${ROUNDS} rounds, every byte checked by sha256; Docker ${version}, image ${IMAGE}, Node ${process.version}`,
      "raw dockerode stream",
      "sbox",
      [
        {
          name: "peak RSS growth, E3 (MiB)",
          a: of("raw", "growth"),
          b: of("e3", "growth"),
          unit: "MiB",
          ratioName: "x raw",
        },
        {
          name: "peak JS heap growth, E3 (MiB)",
          a: of("raw", "heap"),
          b: of("e3", "heap"),
          unit: "MiB",
          ratioName: "x raw",
        },
        {
          name: "peak buffer growth, E3 (MiB)",
          a: of("raw", "buffers"),
          b: of("e3", "buffers"),
          unit: "MiB",
          ratioName: "x raw",
        },
        {
          name: "peak external growth (buffers, external strings), E3 (MiB)",
          a: of("raw", "external"),
          b: of("e3", "external"),
          unit: "MiB",
          ratioName: "x raw",
        },
        {
          name: "garbage collections, E3",
          a: of("raw", "gcs"),
          b: of("e3", "gcs"),
          unit: "",
          ratioName: "x raw",
        },
        { name: "time, E3 (ms)", a: of("raw", "ms"), b: of("e3", "ms"), unit: "ms", ratioName: "x raw" },
        { name: "events, E3", a: of("raw", "events"), b: of("e3", "events"), unit: "", ratioName: "x raw" },
        {
          name: "peak RSS growth, native stream (MiB)",
          a: of("raw", "growth"),
          b: of("native", "growth"),
          unit: "MiB",
          ratioName: "x raw",
        },
        {
          name: "peak external growth, native stream (MiB)",
          a: of("raw", "external"),
          b: of("native", "external"),
          unit: "MiB",
          ratioName: "x raw",
        },
        {
          name: "time, native stream (ms)",
          a: of("raw", "ms"),
          b: of("native", "ms"),
          unit: "ms",
          ratioName: "x raw",
        },
        {
          name: "events, native stream",
          a: of("raw", "events"),
          b: of("native", "events"),
          unit: "",
          ratioName: "x raw",
        },
      ],
    );
    console.log(`\nall ${ROUNDS * chosen.length} runs delivered ${total} bytes with sha256 ${expected}`);
    await sandbox.destroy();
  } finally {
    await client.dispose();
    await removeLabelled(raw, label);
  }
}

if (process.argv[2] === "--child") await child(process.argv[3], process.argv[4], process.argv[5]);
else await main();
