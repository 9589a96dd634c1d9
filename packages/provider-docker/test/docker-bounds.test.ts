/**
 * No wait without a bound, no host path in an error (issue #21): a container paused from outside while a
 * command runs is noticed within the deadline, and a file name longer than the filesystem allows is a
 * Validation error that names the sandbox path, never the engine's storage path on the host.
 */
import { spawnSync } from "node:child_process";
import { inspect } from "node:util";
import { createSandboxClient, type Sandbox, SandboxError } from "@sbox/core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { docker } from "../src/index.js";
import * as env from "./docker-test-env.js";

/** A short deadline, so the test takes seconds; the default is 30 s. */
const DEADLINE_MS = 2_000;

const client = createSandboxClient({
  provider: docker({
    image: env.TEST_IMAGE,
    labels: { [env.RUN_LABEL]: env.RUN_ID },
    requestTimeoutMs: DEADLINE_MS,
  }),
});

function dockerCli(...args: string[]): void {
  const result = spawnSync("docker", args, { encoding: "utf8", timeout: 30_000 });
  if (result.status !== 0) throw new Error(`docker ${args.join(" ")} failed: ${result.stderr}`);
}

async function rejection(promise: PromiseLike<unknown>): Promise<SandboxError> {
  const error = await Promise.resolve(promise).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(SandboxError.isInstance(error), `expected a SandboxError, got ${String(error)}`).toBe(true);
  return error as SandboxError;
}

describe.skipIf(!env.ENGINE.ok)(`docker waits and error paths${env.SKIP_NOTE}`, () => {
  let sandbox: Sandbox;
  let name: string;

  beforeAll(async () => {
    env.ensureTestImage();
    sandbox = await client.create();
    name = sandbox.id.slice("docker:".length);
  });

  afterAll(async () => {
    spawnSync("docker", ["unpause", name], { stdio: "ignore", timeout: 30_000 });
    await sandbox?.destroy();
    await env.removeLeftovers();
  });

  test("a command whose container is paused from outside rejects within the deadline, with InvalidState", async () => {
    const running = sandbox.commands.run(["sh", "-c", "echo started; sleep 60"]);
    const started = new Promise<void>((resolve) => {
      void (async () => {
        for await (const event of running) if (event.type === "stdout") return resolve();
      })().catch(() => resolve());
    });
    await started;
    dockerCli("pause", name);
    const pausedAt = Date.now();
    try {
      const error = await rejection(running);
      const waited = Date.now() - pausedAt;
      expect(error.code).toBe("InvalidState");
      expect(error.message).toMatch(/paused/);
      // Noticed after half a deadline of pause, checked every quarter deadline.
      expect(waited).toBeLessThan(DEADLINE_MS + 2_000);
    } finally {
      dockerCli("unpause", name);
    }
    // Nothing is broken afterwards.
    expect((await sandbox.commands.run(["echo", "after"])).stdout).toBe("after\n");
  });

  test("a pause shorter than half the deadline leaves a running command alone", async () => {
    const running = sandbox.commands.run(["sh", "-c", "sleep 1; echo done"]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    dockerCli("pause", name);
    await new Promise((resolve) => setTimeout(resolve, DEADLINE_MS / 4));
    dockerCli("unpause", name);
    expect((await running).stdout).toBe("done\n");
  });

  test("a 300-byte file name is Validation, and no error shows a host path of the engine", async () => {
    const long = `/tmp/${"n".repeat(300)}`;
    for (const [what, call] of [
      ["files.write", () => sandbox.files.write(long, "x")],
      ["files.read", () => sandbox.files.read(long)],
      ["files.stat", () => sandbox.files.stat(long)],
      ["files.write below a long directory name", () => sandbox.files.write(`${long}/f`, "x")],
    ] as const) {
      const error = await rejection(call());
      expect(error.code, what).toBe("Validation");
      expect(error.message, what).toContain("/tmp/nnnn");
      for (const text of [
        error.message,
        String(error.stack),
        inspect(error, { depth: Number.POSITIVE_INFINITY }),
      ]) {
        expect(text, what).not.toMatch(/\/var\/lib\/docker|overlay2|\/merged\//);
      }
    }
  });
});
