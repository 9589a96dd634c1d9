/**
 * How `handle.kill()` reaches a command on a provider's own streaming exec, by the one decision the exec
 * pipeline makes (`signalling`): through the control the driver hands over when it declares `execSignals`
 * (the command ends as it chooses), else by aborting the exec (the driver's abort kill; the handle reports
 * the signal asked for). Real `sh` processes on this machine.
 */
import { spawn } from "node:child_process";
import { afterAll, describe, expect, test } from "vitest";
import { shDriverCapabilities, shDriverFlags } from "../../test/sh-driver.js";
import { createSandboxClient } from "../client/create-sandbox-client.js";
import { defineProvider } from "../spec/define-provider.js";
import type { DriverExecRequest, DriverExit, DriverOutputCallbacks } from "../spec/provider-spec.js";
import type { CommandHandle, Sandbox } from "./sandbox-types.js";

const POLITE = "trap 'echo term; exit 3' TERM; echo ready; while :; do sleep 0.05; done";

/** Runs `sh -c` in its own process group; an abort kills the group; the control signals it. */
function run(request: DriverExecRequest & Partial<DriverOutputCallbacks>): Promise<DriverExit> {
  return new Promise((resolve, reject) => {
    const script = "shell" in request.command ? request.command.shell : request.command.argv.join(" ");
    const child = spawn("/bin/sh", ["-c", script], { stdio: ["ignore", "pipe", "pipe"], detached: true });
    const group = (signal: NodeJS.Signals) => {
      try {
        if (child.pid) process.kill(-child.pid, signal);
      } catch {
        // Already gone.
      }
    };
    child.stdout.on("data", (chunk: Buffer) => request.onStdout?.(new Uint8Array(chunk)));
    child.stderr.on("data", (chunk: Buffer) => request.onStderr?.(new Uint8Array(chunk)));
    request.onStarted?.({ signal: async (name) => group(name as NodeJS.Signals) });
    const onAbort = () => group("SIGKILL");
    request.signal.addEventListener("abort", onAbort, { once: true });
    child.on("close", (code, signal) => {
      request.signal.removeEventListener("abort", onAbort);
      if (request.signal.aborted) reject(request.signal.reason);
      else resolve(signal ? { signal } : { exitCode: code ?? 1 });
    });
  });
}

/** A provider with a native streaming exec, signalling it or not. */
function streamingProvider(execSignals: boolean) {
  return defineProvider({
    specificationVersion: "v1",
    name: execSignals ? "signalling" : "unsignalled",
    capabilities: { ...shDriverCapabilities, streaming: "native" },
    flags: { ...shDriverFlags, perCommandEnvCwd: false },
    honours: [],
    execSignals,
    doCreate: async () => ({ id: "one", native: {} }),
    doConnect: async () => ({ id: "one", native: {} }),
    doDestroy: async () => {},
    doGetInfo: async () => ({ id: "one", state: "running", metadata: {} }),
    doExec: async (_sandbox, request) => {
      const out: Uint8Array[] = [];
      const exit = await run({ ...request, onStdout: (chunk) => out.push(chunk as Uint8Array) });
      return { ...exit, stdout: Buffer.concat(out), stderr: "" };
    },
    doExecStream: async (_sandbox, request) => run(request),
  });
}

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

describe("handle.kill() on a provider's own streaming exec", () => {
  const clients = [
    createSandboxClient({ provider: streamingProvider(true) }),
    createSandboxClient({ provider: streamingProvider(false) }),
  ];
  afterAll(async () => {
    for (const client of clients) await client.dispose();
  });

  test("execSignals: the driver's control delivers SIGTERM; the trap's output and exit code arrive", async () => {
    const sandbox = await clients[0]!.create();
    const { handle } = await runUntilReady(sandbox, POLITE);
    await handle.kill();
    expect(await handle).toMatchObject({ stdout: "ready\nterm\n", exitCode: 3 });
    const { handle: stubborn } = await runUntilReady(
      sandbox,
      "trap '' TERM; echo ready; while :; do sleep 0.05; done",
    );
    await stubborn.kill(undefined, { graceMs: 200 });
    expect(await stubborn).toMatchObject({ exitCode: 137, signal: "SIGKILL" });
  });

  test("without execSignals the exec is aborted: the command is gone and the signal asked for is reported", async () => {
    const sandbox = await clients[1]!.create();
    const { handle } = await runUntilReady(sandbox, POLITE);
    await handle.kill();
    const result = await handle;
    // The abort is this driver's SIGKILL of the group: no handler ran.
    expect(result).toMatchObject({ stdout: "ready\n", exitCode: 143, signal: "SIGTERM" });
  });

  test("a declaration whose execSignals is not a boolean is refused by defineProvider", () => {
    const bad = { ...streamingProvider(true), execSignals: "yes" as unknown as boolean };
    expect(() => defineProvider(bad)).toThrow(/execSignals must be a boolean/);
  });
});
