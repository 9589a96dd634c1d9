import { type DriverSandbox, SandboxError } from "@sbox/core/spec";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalSandboxHandle } from "../src/index.js";
import {
  type AnyLocalProvider,
  bundleChild,
  call,
  destroyAll,
  eventually,
  MODES,
  processesWithMarker,
  providerFor,
  run,
  tempStateRoot,
} from "./helpers.js";

const state = tempStateRoot("background");
let child: Awaited<ReturnType<typeof bundleChild>>;
beforeAll(async () => {
  child = await bundleChild(state.home);
});
afterAll(() => state.cleanup());

function collector() {
  const out = { stdout: "", stderr: "" };
  return {
    out,
    onStdout: (chunk: Uint8Array | string) => {
      out.stdout += Buffer.from(chunk as Uint8Array).toString();
    },
    onStderr: (chunk: Uint8Array | string) => {
      out.stderr += Buffer.from(chunk as Uint8Array).toString();
    },
  };
}

const marker = () => `${40000 + Math.floor(Math.random() * 9999)}.25`;

describe.each(MODES)("background processes (%s)", (mode) => {
  let provider: AnyLocalProvider;
  let sandbox: DriverSandbox<LocalSandboxHandle>;
  const root = () => `${state.home}/${mode}`;

  beforeAll(async () => {
    provider = providerFor(mode, root());
    sandbox = await provider.doCreate({}, call());
  });
  afterAll(async () => {
    await destroyAll(provider);
  });

  const spawn = (script: string, extra: Record<string, unknown> = {}) => {
    const io = collector();
    const started = provider.doSpawn!(sandbox, {
      command: { shell: script },
      signal: new AbortController().signal,
      onStdout: io.onStdout,
      onStderr: io.onStderr,
      ...extra,
    });
    return { io, started };
  };

  it("streams output while running, then reports the exit code; list follows its state", async () => {
    const { io, started } = spawn("echo one; echo warn >&2; sleep 0.6; echo two; exit 3");
    const proc = await started;
    expect(await eventually(() => io.out.stdout === "one\n")).toBe(true);
    const listed = await provider.doListProcesses!(sandbox, call());
    expect(listed.find((p) => p.pid === proc.pid)).toMatchObject({
      running: true,
      command: expect.stringContaining("echo one"),
    });
    expect(await proc.wait()).toEqual({ exitCode: 3 });
    expect(io.out).toEqual({ stdout: "one\ntwo\n", stderr: "warn\n" });
    const after = await provider.doListProcesses!(sandbox, call());
    expect(after.find((p) => p.pid === proc.pid)).toMatchObject({ running: false, exitCode: 3 });
  });

  it("takes stdin as bytes at spawn, or written and closed later", async () => {
    const given = spawn("cat", { stdin: new TextEncoder().encode("given\n") });
    expect(await (await given.started).wait()).toEqual({ exitCode: 0 });
    expect(given.io.out.stdout).toBe("given\n");
    const live = spawn('while read line; do echo "got $line"; done; echo eof');
    const proc = await live.started;
    await proc.writeStdin!(new TextEncoder().encode("a\n"));
    expect(await eventually(() => live.io.out.stdout === "got a\n")).toBe(true);
    await proc.writeStdin!(new TextEncoder().encode("b\n"));
    await proc.closeStdin!();
    expect(await proc.wait()).toEqual({ exitCode: 0 });
    expect(live.io.out.stdout).toBe("got a\ngot b\neof\n");
  });

  it("delivers stdin given at spawn, and an immediate closeStdin, however fast the command starts", async () => {
    for (let i = 0; i < 5; i++) {
      const fresh = await provider.doCreate({}, call());
      const given = collector();
      const withBytes = await provider.doSpawn!(fresh, {
        command: { shell: "cat" },
        stdin: new TextEncoder().encode(`bytes ${i}\n`),
        signal: new AbortController().signal,
        ...given,
      });
      const closed = await provider.doSpawn!(fresh, {
        command: { shell: "cat; echo eof" },
        signal: new AbortController().signal,
        ...collector(),
      });
      await closed.closeStdin!();
      expect(await withBytes.wait()).toEqual({ exitCode: 0 });
      expect(given.out.stdout).toBe(`bytes ${i}\n`);
      expect(await closed.wait()).toEqual({ exitCode: 0 });
      await provider.doDestroy(fresh, call());
    }
  });

  it("kills with a catchable signal through the wrapper and reports it", async () => {
    const { io, started } = spawn("echo ready; sleep 30");
    const proc = await started;
    expect(await eventually(() => io.out.stdout === "ready\n")).toBe(true);
    await proc.kill("SIGTERM");
    expect(await proc.wait()).toEqual({ exitCode: 143, signal: "SIGTERM" });
  });

  it("never loses a catchable signal sent the moment the process was spawned", async () => {
    // Right after the spawn the signal can land while the wrapper forks the command (whose copy still runs
    // the wrapper's traps) or, under bubblewrap, before the command reported its start (which must not be
    // taken for a failed setup and started again). Either way the command must end by that signal.
    for (let i = 0; i < 12; i++) {
      const proc = await spawn("sleep 30").started;
      await proc.kill("SIGTERM");
      const exit = await Promise.race([
        proc.wait(),
        new Promise((resolve) => setTimeout(() => resolve("still running after 10 s"), 10_000)),
      ]);
      if (typeof exit === "string") await proc.kill("SIGKILL");
      expect(exit).toEqual({ exitCode: 143, signal: "SIGTERM" });
    }
  });

  it("lets a process that handles SIGTERM clean up and exit on its own terms", async () => {
    const { io, started } = spawn(
      "trap 'echo cleaning; exit 0' TERM; echo ready; while :; do sleep 0.1; done",
    );
    const proc = await started;
    expect(await eventually(() => io.out.stdout === "ready\n")).toBe(true);
    await provider.doKillProcess!(sandbox, proc.pid, "SIGTERM", call());
    expect(await proc.wait()).toEqual({ exitCode: 0 });
    expect(io.out.stdout).toBe("ready\ncleaning\n");
  });

  it("kills a tree of a thousand children, leaving no process behind", async () => {
    const mark = marker();
    const { started } = spawn(
      `i=0; while [ $i -lt 1000 ]; do sleep ${mark} & i=$((i+1)); done; echo forked; wait`,
    );
    const proc = await started;
    expect(
      await eventually(async () => (await processesWithMarker(`sleep\0${mark}`)).length === 1000, 60_000),
    ).toBe(true);
    await provider.doKillProcess!(sandbox, proc.pid, "SIGKILL", call());
    expect(await proc.wait()).toEqual({ exitCode: 137, signal: "SIGKILL" });
    expect(await processesWithMarker(`sleep\0${mark}`)).toEqual([]);
    expect(await processesWithMarker(mark)).toEqual([]);
  });

  it("kills children that left the process group (setsid) too", async () => {
    const mark = marker();
    const { started } = spawn(`setsid sleep ${mark} & sleep ${mark}`);
    const proc = await started;
    expect(await eventually(async () => (await processesWithMarker(`sleep\0${mark}`)).length === 2)).toBe(
      true,
    );
    await proc.kill();
    await proc.wait();
    expect(await processesWithMarker(`sleep\0${mark}`)).toEqual([]);
  });

  it("survives the program that started it, and another program re-attaches by pid", async () => {
    const spawned = await child(
      root(),
      mode,
      "spawn",
      sandbox.id,
      "echo started; sleep 1; echo finished; exit 4",
    );
    const pid = spawned.pid as number;
    expect(Number.isInteger(pid)).toBe(true);
    // The starting program has exited; the process runs on.
    const listed = await provider.doListProcesses!(sandbox, call());
    expect(listed.find((p) => p.pid === pid)?.running).toBe(true);
    const io = collector();
    const proc = await provider.doConnectProcess!(sandbox, pid, { ...call(), ...io });
    expect(await proc.wait()).toEqual({ exitCode: 4 });
    // Output from before the attach is replayed.
    expect(io.out.stdout).toBe("started\nfinished\n");
  });

  it("is followed from another program while this one started it", async () => {
    const { started } = spawn("echo a; sleep 0.5; echo b; exit 9");
    const proc = await started;
    const followed = await child(root(), mode, "follow", sandbox.id, String(proc.pid));
    expect(followed).toEqual({ stdout: "a\nb\n", exit: { exitCode: 9 } });
    expect(await proc.wait()).toEqual({ exitCode: 9 });
  });

  it("takes stdin written by another program while the starting one holds the pipe", async () => {
    const { io, started } = spawn('read line; echo "got $line"');
    const proc = await started;
    expect(await child(root(), mode, "write", sandbox.id, String(proc.pid), "hello\n")).toEqual({
      written: 6,
    });
    expect(await proc.wait()).toEqual({ exitCode: 0 });
    expect(io.out.stdout).toBe("got hello\n");
  });

  it("sees end of input on stdin once the program that started it is gone", async () => {
    const spawned = await child(root(), mode, "spawn", sandbox.id, 'read line; echo "eof:$?:$line"');
    const io = collector();
    const proc = await provider.doConnectProcess!(sandbox, spawned.pid as number, { ...call(), ...io });
    expect(await proc.wait()).toEqual({ exitCode: 0 });
    expect(io.out.stdout).toBe("eof:1:\n");
  });

  it("answers NotFound for a pid it never started", async () => {
    for (const attempt of [
      () => provider.doConnectProcess!(sandbox, 999_999, { ...call(), ...collector() }),
      () => provider.doKillProcess!(sandbox, process.pid, "SIGKILL", call()),
    ]) {
      const error = await attempt().catch((e: unknown) => e);
      expect(SandboxError.isInstance(error) && error.code).toBe("NotFound");
    }
  });

  it("fails a background command whose cwd does not exist like cd would", async () => {
    const { io, started } = spawn("echo ran", { cwd: "/workspace/missing-dir" });
    expect(await (await started).wait()).toEqual({ exitCode: 1 });
    expect(io.out.stdout).toBe("");
    expect(io.out.stderr).toContain("missing-dir");
  });

  it("stop kills background processes and keeps files; destroy leaves nothing", async () => {
    const other = await provider.doCreate({}, call());
    const mark = marker();
    await run(provider, other, "echo keep > kept.txt");
    const proc = await provider.doSpawn!(other, {
      command: { shell: `sleep ${mark}` },
      signal: new AbortController().signal,
      ...collector(),
    });
    await provider.doStop!(other, call());
    expect(await proc.wait()).toEqual({ exitCode: 137, signal: "SIGKILL" });
    expect(await processesWithMarker(mark)).toEqual([]);
    expect((await provider.doGetInfo(other, call())).state).toBe("stopped");
    await provider.doResume!(other, call());
    expect((await run(provider, other, "cat kept.txt")).stdout).toBe("keep\n");
    await provider.doSpawn!(other, {
      command: { shell: `sleep ${mark}` },
      signal: new AbortController().signal,
      ...collector(),
    });
    await provider.doDestroy(other, call());
    await provider.doDestroy(other, call());
    expect(await processesWithMarker(mark)).toEqual([]);
  });
});
