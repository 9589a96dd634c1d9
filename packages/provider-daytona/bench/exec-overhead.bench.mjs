#!/usr/bin/env node
/**
 * The per-command cost of provider-daytona's exec on the Daytona emulator of `@sbox/emulators` (each
 * sandbox a sandbox of its backend): `true` run as the raw SDK calls a buffered command needs at the least
 * (a session created, `executeSessionCommand` synchronous, the session deleted) against the driver's
 * buffered exec (the same calls, the command under the supervisor that encodes its output) and its
 * streaming exec (an async session command, its logs socket, its exit code), in the same run, rotated
 * rounds. Prints medians with their interquartile range and the ratio sbox / raw. Not a test: it asserts
 * nothing about time; it fails only when the output is wrong.
 *
 *   pnpm --filter @sbox/emulators --filter @sbox/provider-daytona build && node packages/provider-daytona/bench/exec-overhead.bench.mjs
 *
 * Environment: SBOX_BENCH_ROUNDS (default 30), SBOX_EMULATOR_BACKEND (docker, else the emulator's default).
 */
import { randomBytes } from "node:crypto";
import { startDaytonaEmulator } from "@sbox/emulators/daytona";
import { printComparison, rotatedRounds, summarize } from "../../../scripts/bench-rounds.mjs";
import { daytona } from "../dist/index.js";

const ROUNDS = Number(process.env.SBOX_BENCH_ROUNDS ?? 30);

const emulator = await startDaytonaEmulator(
  process.env.SBOX_EMULATOR_BACKEND === "docker" ? { backend: "docker" } : {},
);
try {
  const provider = daytona({ apiKey: emulator.apiKey, apiUrl: emulator.url, target: "us" });
  const handle = await provider.doCreate({}, { signal: AbortSignal.timeout(120_000) });
  const native = handle.native;
  const signal = () => AbortSignal.timeout(60_000);
  const check = (exitCode, out) => {
    if (exitCode !== 0 || out.length !== 0)
      throw new Error(`true answered ${exitCode} with ${out.length} bytes`);
  };
  try {
    const samples = await rotatedRounds(
      {
        raw: async () => {
          const id = `bench-${randomBytes(6).toString("hex")}`;
          await native.process.createSession(id);
          const r = await native.process.executeSessionCommand(id, { command: "true", runAsync: false });
          await native.process.deleteSession(id);
          check(r.exitCode, r.stdout ?? "");
        },
        buffered: async () => {
          const r = await provider.doExec(handle, { command: { argv: ["true"] }, signal: signal() });
          check(r.exitCode, r.stdout);
        },
        streamed: async () => {
          let out = 0;
          const exit = await provider.doExecStream(handle, {
            command: { argv: ["true"] },
            signal: signal(),
            onStdout: (chunk) => {
              out += chunk.length;
            },
            onStderr: () => {},
          });
          check(exit.exitCode, { length: out });
        },
      },
      { rounds: ROUNDS },
    );
    const s = Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, summarize(values)]));
    printComparison(
      `provider-daytona exec of \`true\` on the Daytona emulator, ${ROUNDS} rounds, Node ${process.version}`,
      "raw SDK session command",
      "sbox",
      [
        { name: "buffered exec (doExec)", a: s.raw, b: s.buffered, unit: "ms" },
        { name: "streaming exec (doExecStream)", a: s.raw, b: s.streamed, unit: "ms" },
      ],
    );
  } finally {
    await provider.doDestroy(handle, { signal: AbortSignal.timeout(60_000) }).catch(() => undefined);
  }
} finally {
  await emulator.close();
}
