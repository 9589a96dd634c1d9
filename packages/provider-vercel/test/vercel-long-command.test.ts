/**
 * The acceptance case: a command that outlives any single HTTP request — a 5-minute loop printing
 * a line every second — streams to its end through the provider while other calls on the same sandbox
 * (files, other commands, getInfo) keep being answered. The command starts detached and its output is
 * followed through the logs stream, so no request lasts as long as the command, and nothing else waits
 * for it. SBOX_VERCEL_LONG_COMMAND_SECONDS shortens the run (default 300: the real five minutes; the
 * emulator's clock cannot shorten a real `sleep`).
 */
import { createSandboxClient } from "@sbox/core";
import { afterAll, expect, test } from "vitest";
import { startTestEmulator, testProvider } from "./vercel-test-env.js";

const SECONDS = Number(process.env.SBOX_VERCEL_LONG_COMMAND_SECONDS ?? 300);
const emulator = await startTestEmulator();
const client = createSandboxClient({
  provider: testProvider(emulator, { timeoutMs: (SECONDS + 120) * 1000 }),
});
afterAll(async () => {
  await client.dispose();
  await emulator.close();
});

test(
  `a ${SECONDS}-second command with output every second streams to its end without blocking other calls`,
  async () => {
    const sandbox = await client.create();
    try {
      const started = Date.now();
      const arrivals: { at: number; text: string }[] = [];
      const long = sandbox.commands.run(
        ["sh", "-c", `i=1; while [ $i -le ${SECONDS} ]; do echo tick $i; i=$((i+1)); sleep 1; done`],
        { onStdout: (chunk) => arrivals.push({ at: Date.now() - started, text: chunk }) },
      );
      let finished = false;
      void Promise.resolve(long).then(
        () => {
          finished = true;
        },
        () => {
          finished = true;
        },
      );
      // Other calls, every few seconds while the command runs: each is answered while it still runs.
      let others = 0;
      while (!finished && Date.now() - started < (SECONDS - 10) * 1000) {
        const n = others++;
        await sandbox.files.write(`side-${n}.txt`, `side ${n}`);
        expect(await sandbox.files.readText(`side-${n}.txt`)).toBe(`side ${n}`);
        expect((await sandbox.commands.run(["echo", `other ${n}`])).stdout).toBe(`other ${n}\n`);
        expect((await sandbox.getInfo()).state).toBe("running");
        expect(finished).toBe(false);
        await new Promise((resolve) => setTimeout(resolve, 5_000));
      }
      const result = await long;
      expect(result.exitCode).toBe(0);
      const lines = result.stdout.trimEnd().split("\n");
      expect(lines).toHaveLength(SECONDS);
      expect(lines.every((line, i) => line === `tick ${i + 1}`)).toBe(true);
      expect(arrivals.map((a) => a.text).join("")).toBe(result.stdout);
      // Streamed: the first tick came right away, not at the end.
      expect(arrivals[0]!.at).toBeLessThan((SECONDS * 1000) / 2);
      expect(others).toBeGreaterThan(SECONDS >= 60 ? 5 : 0);
      console.log(
        `long command: ${SECONDS} s, ${arrivals.length} chunks, first after ${arrivals[0]!.at} ms, ${others} rounds of other calls meanwhile`,
      );
    } finally {
      await sandbox.destroy();
    }
  },
  (SECONDS + 180) * 1000,
);
