#!/usr/bin/env node
/**
 * Whether splitting a transfer over parallel Docker execs buys throughput (it decides E5's piece sizes on
 * raw stdin/stdout): 20 MB written through the stdin of 1, 2 or 4 concurrent raw dockerode execs (`cat`
 * and `dd` into files) and read through the stdout of 1, 2 or 4 (`dd` pieces, and one `cat`). Rotated
 * order, many rounds; prints MB/s of the medians with their interquartile range. Not a test: it asserts
 * nothing.
 *
 *   node packages/provider-docker/bench/exec-parallel.bench.mjs
 *
 * Environment: SBOX_BENCH_IMAGE (default sbox-busybox:latest), SBOX_BENCH_ROUNDS (default 6).
 */
import { randomBytes } from "node:crypto";
import Docker from "dockerode";
import { rotatedRounds, summarize } from "../../../scripts/bench-rounds.mjs";
import { rawCreate, rawRun, removeLabelled } from "./raw-dockerode.mjs";

const IMAGE = process.env.SBOX_BENCH_IMAGE ?? "sbox-busybox:latest";
const ROUNDS = Number(process.env.SBOX_BENCH_ROUNDS ?? 6);
const SIZE = 20_000_000;
const raw = new Docker();
const label = `sbox.bench=${process.pid}`;

try {
  const container = await rawCreate(raw, IMAGE, { "sbox.bench": String(process.pid) });
  const data = randomBytes(SIZE);
  await rawRun(container, ["sh", "-c", "cat > /tmp/src.bin"], data);
  const write = (execs, tool) =>
    Promise.all(
      Array.from({ length: execs }, (_, i) => {
        const part = data.subarray((i * SIZE) / execs, ((i + 1) * SIZE) / execs);
        const script = tool === "cat" ? `cat > /tmp/w${i}.bin` : `dd of=/tmp/w${i}.bin bs=65536 2>/dev/null`;
        return rawRun(container, ["sh", "-c", script], part);
      }),
    );
  const read = (execs) =>
    Promise.all(
      Array.from({ length: execs }, (_, i) => {
        const block = 10_000;
        const count = SIZE / execs / block;
        return rawRun(container, [
          "sh",
          "-c",
          `dd if=/tmp/src.bin bs=${block} skip=${i * count} count=${count} 2>/dev/null`,
        ]);
      }),
    );
  const samples = await rotatedRounds(
    {
      "stdin, 1 exec (cat)": () => write(1, "cat"),
      "stdin, 1 exec (dd)": () => write(1, "dd"),
      "stdin, 2 execs (dd)": () => write(2, "dd"),
      "stdin, 4 execs (dd)": () => write(4, "dd"),
      "stdout, 1 exec (dd)": () => read(1),
      "stdout, 2 execs (dd)": () => read(2),
      "stdout, 4 execs (dd)": () => read(4),
      "stdout, 1 exec (cat)": () => rawRun(container, ["cat", "/tmp/src.bin"]),
    },
    { rounds: ROUNDS },
  );
  console.log(`\n20 MB over parallel docker execs, ${ROUNDS} rounds, Node ${process.version}\n`);
  console.log("| transfer | MB/s (median) | ms median (p25–p75) |\n|---|---:|---:|");
  for (const [name, values] of Object.entries(samples)) {
    const s = summarize(values);
    console.log(
      `| ${name} | ${(SIZE / 1e3 / s.median).toFixed(1)} | ${s.median.toFixed(0)} (${s.p25.toFixed(0)}–${s.p75.toFixed(0)}) |`,
    );
  }
} finally {
  await removeLabelled(raw, label);
}
