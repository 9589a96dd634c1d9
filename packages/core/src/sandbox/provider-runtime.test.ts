/**
 * The runtime is where native or emulated is decided: one loop over CAPABILITY_DRIVER_METHODS, the
 * emulation table for the rest, and path resolution in front of every file method.
 */
import { afterAll, describe, expect, test } from "vitest";
import { shDriver } from "../../test/sh-driver.js";
import { CAPABILITY_DRIVER_METHODS } from "../capabilities/capability-methods.js";
import type { CapabilityName } from "../capabilities/capability-names.js";
import { createSandboxClient } from "../client/create-sandbox-client.js";
import { CAPABILITY_EMULATIONS } from "../emulation/capability-emulations.js";
import { defineProvider } from "../spec/define-provider.js";
import type { FileInfo } from "../spec/files-types.js";
import { createProviderRuntime } from "./provider-runtime.js";

const base = shDriver({ userland: "dash" });
afterAll(() => base.cleanup());

describe("createProviderRuntime", () => {
  test("every emulatable capability has its emulated methods in the one table, and they are the ones the spec names", () => {
    const runtime = createProviderRuntime(base, {});
    for (const [name, methods] of Object.entries(CAPABILITY_DRIVER_METHODS)) {
      const level = runtime.capabilities.map[name as CapabilityName];
      for (const method of methods.required) {
        const present = typeof (runtime.driver as unknown as Record<string, unknown>)[method] === "function";
        expect(present, `${method} of ${name} (${level})`).toBe(level !== "unsupported");
      }
      const emulated = CAPABILITY_EMULATIONS[name as CapabilityName];
      if (level === "emulated") expect(emulated, `an emulation for ${name}`).toBeDefined();
    }
    // The facade never falls back itself: the stream methods are always in the runtime driver.
    expect(typeof runtime.driver.doReadFileStream).toBe("function");
  });

  test("a native file method receives the relative path resolved against the working directory", async () => {
    const seen: string[] = [];
    const provider = defineProvider({
      ...base,
      name: "sh-native-stat",
      async doStat(_sandbox, path): Promise<FileInfo> {
        seen.push(path);
        return { name: "x", path, type: "file", size: 0 };
      },
    });
    const client = createSandboxClient({ provider });
    const sandbox = await client.create();
    try {
      const cwd = (await sandbox.commands.run("pwd")).stdout.trim();
      await sandbox.files.stat("sub/../x//");
      await sandbox.files.stat("/abs/./y/");
      expect(seen).toEqual([`${cwd}/x`, "/abs/y"]);
    } finally {
      await sandbox.destroy();
    }
  });

  test("a native kill of an emulated background process still lets wait() name the signal", async () => {
    const killed: string[] = [];
    const provider = defineProvider({
      ...base,
      name: "sh-native-kill",
      capabilities: { ...base.capabilities, killProcess: "native" },
      async doKillProcess(sandbox, pid, signal, options) {
        killed.push(signal);
        await base.doExec(sandbox, {
          command: { shell: `kill -${signal.replace(/^SIG/, "")} -${pid}` },
          signal: options.signal,
        });
      },
    });
    const client = createSandboxClient({ provider });
    const sandbox = await client.create();
    try {
      const proc = await sandbox.commands.spawn("sleep 30");
      await sandbox.commands.kill(proc.pid, "SIGUSR1");
      expect(await proc.wait()).toEqual({ exitCode: 138, signal: "SIGUSR1" });
      expect(killed).toEqual(["SIGUSR1"]);
    } finally {
      await sandbox.destroy();
    }
  });

  test("a relative cwd reaches a provider that takes the cwd itself as an absolute path", async () => {
    const seen: (string | undefined)[] = [];
    const taking = shDriver({ userland: "dash", envCwd: true });
    const provider = defineProvider({
      ...taking,
      name: "sh-native-cwd",
      // Without streaming a command goes straight to doExec, which takes the cwd itself.
      capabilities: { ...taking.capabilities, streaming: "unsupported" },
      async doExec(sandbox, request) {
        seen.push(request.cwd);
        return taking.doExec(sandbox, request);
      },
    });
    const client = createSandboxClient({ provider });
    const sandbox = await client.create();
    try {
      const cwd = (await sandbox.commands.run("pwd")).stdout.trim();
      await sandbox.commands.run(["mkdir", "-p", "sub/dir"]);
      expect((await sandbox.commands.run("pwd", { cwd: "sub/./dir" })).stdout).toBe(`${cwd}/sub/dir\n`);
      expect(seen.at(-1)).toBe(`${cwd}/sub/dir`);
      const proc = await sandbox.commands.spawn("pwd", { cwd: "sub" });
      let out = "";
      for await (const chunk of proc.stdout) out += chunk;
      expect(out).toBe(`${cwd}/sub\n`);
    } finally {
      await sandbox.destroy();
      taking.cleanup();
    }
  });

  test("the emulated file methods see resolved paths too, and read back what was written relatively", async () => {
    const client = createSandboxClient({ provider: base });
    const sandbox = await client.create();
    try {
      await sandbox.files.write("notes/a.txt", "hi");
      const cwd = (await sandbox.commands.run("pwd")).stdout.trim();
      expect((await sandbox.commands.run(["cat", `${cwd}/notes/a.txt`])).stdout).toBe("hi");
      expect((await sandbox.files.stat("notes/../notes/a.txt")).path).toBe(`${cwd}/notes/a.txt`);
    } finally {
      await sandbox.destroy();
    }
  });
});
