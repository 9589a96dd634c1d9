#!/usr/bin/env node
/**
 * Memory of reading a 200 MB file: `files.read` and `files.readStream` through the sbox client and the
 * local provider, against `fs.promises.readFile` of the same bytes on the host (the raw call: it holds the
 * file once). Each variant runs in its own Node process (so its peak RSS is its own); each reports its peak
 * RSS growth over the RSS before the call, its time and the sha256 of what it read, which must match.
 * Rotated order over rounds; prints medians with interquartile range and the ratio against raw. Not a test:
 * it asserts nothing about time or memory; it fails only when the bytes differ.
 *
 *   pnpm --filter @sbox/core --filter @sbox/provider-local build && node packages/provider-local/bench/files-read-memory.bench.mjs
 *
 * Environment: SBOX_BENCH_ROUNDS (default 3), SBOX_BENCH_MB (default 200), SBOX_BENCH_ISOLATION (default
 * "auto").
 */
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createSandboxClient } from "@sbox/core";
import { printComparison, rotatedRounds, summarize } from "../../../scripts/bench-rounds.mjs";
import { local } from "../dist/index.js";

const ROUNDS = Number(process.env.SBOX_BENCH_ROUNDS ?? 3);
const SIZE = Number(process.env.SBOX_BENCH_MB ?? 200) * 1_000_000;
const ISOLATION = process.env.SBOX_BENCH_ISOLATION ?? "auto";
const MIB = 1024 * 1024;
const IN_SANDBOX = "big.bin";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Samples RSS every 5 ms until stopped; returns the peak. */
function rssPeak() {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 5);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, process.memoryUsage.rss());
    },
  };
}

/** One variant, in a child process: prints one JSON line. */
async function child(variant, root, sandboxId, hostFile) {
  let read;
  let close = async () => undefined;
  if (variant === "raw") {
    read = async () =>
      createHash("sha256")
        .update(await readFile(hostFile))
        .digest("hex");
  } else {
    const client = createSandboxClient({ provider: local({ root, isolation: ISOLATION }) });
    const sandbox = await client.connect(sandboxId);
    close = () => client.dispose();
    read =
      variant === "read"
        ? async () =>
            createHash("sha256")
              .update(await sandbox.files.read(IN_SANDBOX))
              .digest("hex")
        : async () => {
            const hash = createHash("sha256");
            for await (const chunk of sandbox.files.readStream(IN_SANDBOX)) hash.update(chunk);
            return hash.digest("hex");
          };
  }
  globalThis.gc?.();
  await sleep(100);
  const before = process.memoryUsage.rss();
  const peak = rssPeak();
  const started = performance.now();
  const sha = await read();
  const ms = performance.now() - started;
  const growth = (peak.stop() - before) / MIB;
  await close();
  console.log(JSON.stringify({ variant, ms, growth, sha }));
}

function runChild(...args) {
  return new Promise((resolve, reject) => {
    const node = spawn(
      process.execPath,
      ["--expose-gc", fileURLToPath(import.meta.url), "--child", ...args],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    let out = "";
    node.stdout.on("data", (chunk) => {
      out += chunk;
    });
    node.on("error", reject);
    node.on("close", (code) => {
      if (code !== 0) reject(new Error(`${args[0]} exited with ${code}`));
      else resolve(JSON.parse(out.trim().split("\n").pop()));
    });
  });
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), "sbox-bench-read-"));
  const root = join(work, "root");
  const hostFile = join(work, "host.bin");
  const client = createSandboxClient({ provider: local({ root, isolation: ISOLATION }) });
  try {
    const sandbox = await client.create({});
    const data = randomBytes(SIZE);
    const expected = createHash("sha256").update(data).digest("hex");
    await writeFile(hostFile, data);
    await sandbox.files.write(IN_SANDBOX, data);
    const results = { raw: [], read: [], stream: [] };
    await rotatedRounds(
      Object.fromEntries(
        Object.keys(results).map((variant) => [
          variant,
          async () => {
            const r = await runChild(variant, root, sandbox.id, hostFile);
            if (r.sha !== expected) throw new Error(`${variant} read different bytes`);
            results[variant].push(r);
            return r.ms;
          },
        ]),
      ),
      { rounds: ROUNDS, warmup: 0 },
    );
    const of = (variant, key) => summarize(results[variant].map((r) => r[key]));
    printComparison(
      `provider-local files.read of ${SIZE / 1e6} MB (isolation ${ISOLATION}), ${ROUNDS} rounds, each variant in its own process, Node ${process.version}`,
      "raw fs.readFile",
      "sbox",
      [
        {
          name: "peak RSS growth, files.read (MiB)",
          a: of("raw", "growth"),
          b: of("read", "growth"),
          unit: "MiB",
          ratioName: "x raw",
        },
        {
          name: "time, files.read (ms)",
          a: of("raw", "ms"),
          b: of("read", "ms"),
          unit: "ms",
          ratioName: "x raw",
        },
        {
          name: "peak RSS growth, files.readStream (MiB)",
          a: of("raw", "growth"),
          b: of("stream", "growth"),
          unit: "MiB",
          ratioName: "x raw",
        },
        {
          name: "time, files.readStream (ms)",
          a: of("raw", "ms"),
          b: of("stream", "ms"),
          unit: "ms",
          ratioName: "x raw",
        },
      ],
    );
    console.log(`\nfile size ${(SIZE / MIB).toFixed(1)} MiB; every read matched sha256 ${expected}`);
    await sandbox.destroy();
  } finally {
    await client.dispose();
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--child")
  await child(process.argv[3], process.argv[4], process.argv[5], process.argv[6]);
else await main();
