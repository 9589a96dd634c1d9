/**
 * A program that does not exist is reported as a shell reports it — `nosuchcommand: command not found`,
 * exit 127 — on every path the core runs argv through a shell (E1 cwd/env, E2 exit marker, E3 streaming,
 * E4 background), in dash and in busybox, never in the words of the wrapper (`sh: 1: exec: ...`).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { shDriver, USERLANDS } from "../../test/sh-driver.js";
import { createSandboxClient } from "../client/create-sandbox-client.js";
import type { Sandbox } from "../sandbox/sandbox-types.js";

describe.each(USERLANDS)("a missing program over a bare %s exec", (userland) => {
  const provider = shDriver({ userland, exitCodes: false, envCwd: false });
  const client = createSandboxClient({ provider });
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await client.create();
  });
  afterAll(async () => {
    await sandbox.destroy();
    provider.cleanup();
  });

  test("run(argv) says `NAME: command not found` and exits 127 (E2, and E1 with a cwd)", async () => {
    for (const options of [{}, { cwd: "/", env: { A: "1" } }]) {
      const result = await sandbox.commands.run(["nosuchcommand", "--flag"], options);
      expect(result.exitCode).toBe(127);
      expect(result.stderr).toBe("nosuchcommand: command not found\n");
    }
  });

  test("a path that is missing, a directory or not executable gets the shell's words and code", async () => {
    const missing = await sandbox.commands.run(["./no/such/program"]);
    expect([missing.exitCode, missing.stderr]).toEqual([
      127,
      "./no/such/program: No such file or directory\n",
    ]);
    const directory = await sandbox.commands.run(["/"]);
    expect([directory.exitCode, directory.stderr]).toEqual([126, "/: Is a directory\n"]);
  });

  test("a hostile program name is reported verbatim, not run", async () => {
    const name = "$(echo pwned >&2)'\"`x`";
    const result = await sandbox.commands.run([name]);
    expect(result.exitCode).toBe(127);
    expect(result.stderr).toBe(`${name}: command not found\n`);
  });

  test("streamed and background commands say the same", async () => {
    let streamed = "";
    const run = await sandbox.commands.run(["nosuchcommand"], { onStderr: (chunk) => (streamed += chunk) });
    expect(run.exitCode).toBe(127);
    expect(streamed).toBe("nosuchcommand: command not found\n");
    const process = await sandbox.commands.spawn(["nosuchcommand"]);
    let stderr = "";
    for await (const chunk of process.stderr) stderr += chunk;
    expect(await process.wait()).toEqual({ exitCode: 127 });
    expect(stderr).toBe("nosuchcommand: command not found\n");
  });
});
