/**
 * `handle.kill()` of a running command on real processes, under both isolation modes: SIGTERM first (a
 * handler's output and exit code arrive), SIGKILL after the grace period, exactly the signal named, and a
 * hostile tree (children in a new session and process group, every signal it can ignore ignored) leaves
 * nothing running, as `ps` inside the sandbox shows.
 */
import { randomBytes } from "node:crypto";
import { type CommandHandle, createSandboxClient, type Sandbox } from "@sbox/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { local } from "../src/index.js";
import { tempStateRoot } from "./helpers.js";

const state = tempStateRoot("kill");
afterAll(() => state.cleanup());

const POLITE = "trap 'echo term; exit 3' TERM; echo ready; while :; do sleep 0.1; done";

/** Resolves once `script` printed `ready`, with its handle in an object (a bare handle would be awaited). */
async function runUntilReady(sandbox: Sandbox, script: string): Promise<{ handle: CommandHandle }> {
  let seen = "";
  let onReady!: () => void;
  const ready = new Promise<void>((resolve) => {
    onReady = resolve;
  });
  const handle = sandbox.commands.run(script, {
    onStdout: (chunk) => {
      seen += chunk;
      if (seen.includes("ready")) onReady();
    },
  });
  await Promise.race([ready, handle.then(() => undefined)]);
  return { handle };
}

/** The command lines of the sandbox's processes that carry `marker`, as `ps` inside the sandbox lists them. */
async function processesCarrying(sandbox: Sandbox, marker: string): Promise<string[]> {
  const listed = await sandbox.commands.run(["ps", "-eo", "pid,args"]);
  expect(listed.exitCode).toBe(0);
  return listed.stdout.split("\n").filter((line) => line.includes(marker) && !line.includes("ps -eo"));
}

describe.each(["bwrap", "none"] as const)("handle.kill() (%s)", (isolation) => {
  const client = createSandboxClient({ provider: local({ root: `${state.home}/${isolation}`, isolation }) });
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await client.create();
  });
  afterAll(async () => {
    await sandbox.destroy();
    await client.dispose();
  });

  it("sends SIGTERM first: the trap's output arrives and its exit code 3 is the result", async () => {
    const { handle } = await runUntilReady(sandbox, POLITE);
    await handle.kill();
    const result = await handle;
    expect(result).toMatchObject({ stdout: "ready\nterm\n", exitCode: 3 });
    expect(result.signal).toBeUndefined();
  });

  it("sends SIGKILL after the grace period to a command that ignores SIGTERM", async () => {
    const { handle } = await runUntilReady(sandbox, "trap '' TERM; echo ready; while :; do sleep 0.1; done");
    const before = Date.now();
    await handle.kill(undefined, { graceMs: 700 });
    expect(Date.now() - before).toBeGreaterThanOrEqual(690);
    expect(await handle).toMatchObject({ exitCode: 137, signal: "SIGKILL" });
  });

  it("sends exactly the signal named: SIGKILL at once (no trap runs), SIGINT to an INT handler", async () => {
    const { handle: killed } = await runUntilReady(sandbox, POLITE);
    const before = Date.now();
    await killed.kill("SIGKILL");
    const result = await killed;
    expect(Date.now() - before).toBeLessThan(3000);
    expect(result).toMatchObject({ stdout: "ready\n", exitCode: 137, signal: "SIGKILL" });

    const { handle: interrupted } = await runUntilReady(sandbox, `trap 'echo int; exit 5' INT; ${POLITE}`);
    await interrupted.kill("INT");
    expect(await interrupted).toMatchObject({ stdout: "ready\nint\n", exitCode: 5 });
  });

  it("leaves nothing running of a hostile tree: children in a new session, signals ignored", async () => {
    const marker = `sbox-hostile-${randomBytes(6).toString("hex")}`;
    const loop = "trap '' TERM HUP INT QUIT USR1; while :; do sleep 0.1; done";
    const script = [
      "trap '' TERM HUP INT",
      // A child in a new session (and so a new process group), another one left in the command's group.
      `setsid sh -c ${JSON.stringify(loop)} ${marker} &`,
      `sh -c ${JSON.stringify(`(${loop}) & ${loop}`)} ${marker} &`,
      "echo ready",
      "while :; do sleep 0.1; done",
    ].join("\n");
    const { handle } = await runUntilReady(sandbox, script);
    expect((await processesCarrying(sandbox, marker)).length).toBeGreaterThanOrEqual(3);
    await handle.kill(undefined, { graceMs: 300 });
    expect((await handle).signal).toBe("SIGKILL");
    expect(await processesCarrying(sandbox, marker)).toEqual([]);
  });
});
