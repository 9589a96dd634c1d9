import { createSandboxClient, SandboxError } from "@sbox/core";
import { afterAll, describe, expect, it } from "vitest";
import { local } from "../src/index.js";
import { eventually, processesWithMarker, tempStateRoot } from "./helpers.js";

const state = tempStateRoot("client");
afterAll(() => state.cleanup());

async function codeOf(promise: PromiseLike<unknown>): Promise<string | undefined> {
  const error = await Promise.resolve(promise).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (error === undefined) return undefined;
  if (!SandboxError.isInstance(error)) throw error;
  return error.code;
}

describe.each(["bwrap", "none"] as const)("through createSandboxClient (%s)", (isolation) => {
  const root = `${state.home}/${isolation}`;
  const client = createSandboxClient({ provider: local({ root, isolation }) });
  afterAll(async () => {
    for await (const info of client.list()) await (await client.connect(info.id)).destroy();
    await client.dispose();
  });

  it("runs commands, moves files and reconnects by the qualified id", async () => {
    const sandbox = await client.create({ metadata: { suite: "client" } });
    expect(sandbox.id).toMatch(/^local:[a-z0-9]{20}$/);
    const result = await sandbox.commands.run([
      "sh",
      "-c",
      'echo "$1"; echo err >&2; exit 4',
      "sh",
      "it's $(x)",
    ]);
    expect(result).toMatchObject({ stdout: "it's $(x)\n", stderr: "err\n", exitCode: 4 });
    await sandbox.files.write("dir/hello.txt", "hello");
    expect(await sandbox.files.readText("dir/hello.txt")).toBe("hello");
    expect((await sandbox.commands.run("cat dir/hello.txt")).stdout).toBe("hello");
    const again = await client.connect(sandbox.id);
    expect((await again.getInfo()).metadata).toEqual({ suite: "client" });
    await sandbox.destroy();
    await sandbox.destroy();
    expect(await codeOf(client.connect(sandbox.id))).toBe("NotFound");
    expect(await codeOf(client.connect("local:../../etc"))).toBe("Validation");
  });

  it("a timeout rejects with Timeout after killing the whole tree", async () => {
    const sandbox = await client.create();
    const mark = `${61000 + Math.floor(Math.random() * 999)}.5`;
    const code = await codeOf(sandbox.commands.run(`sleep ${mark} & sleep ${mark}`, { timeoutMs: 500 }));
    expect(code).toBe("Timeout");
    expect(await processesWithMarker(`sleep\0${mark}`)).toEqual([]);
    await sandbox.destroy();
  });

  it("handle.kill ends a running command with the signal as data", async () => {
    const sandbox = await client.create();
    const handle = sandbox.commands.run("echo started; sleep 30");
    const chunks: string[] = [];
    for await (const event of handle) {
      if (event.type === "stdout") {
        chunks.push(event.data);
        await handle.kill("SIGTERM");
      }
    }
    const result = await handle;
    expect(chunks.join("")).toBe("started\n");
    expect(result.exitCode).toBe(143);
    expect(result.signal).toBe("SIGTERM");
    await sandbox.destroy();
  });

  it("handle.kill() of a command that forked a thousand children leaves no process behind", async () => {
    const sandbox = await client.create();
    const mark = `${62000 + Math.floor(Math.random() * 999)}.5`;
    const handle = sandbox.commands.run(
      `i=0; while [ $i -lt 1000 ]; do sleep ${mark} & i=$((i+1)); done; echo forked; wait`,
    );
    expect(
      await eventually(async () => (await processesWithMarker(`sleep\0${mark}`)).length === 1000, 60_000),
    ).toBe(true);
    // SIGTERM first (kill()'s default): it reaches all thousand children, none of which handles it.
    await handle.kill();
    const result = await handle;
    expect(result.signal).toBe("SIGTERM");
    expect(await processesWithMarker(`sleep\0${mark}`)).toEqual([]);
    await sandbox.destroy();
  });

  it("streams 100 MB through run() callbacks with bounded memory when output is not collected", async () => {
    const sandbox = await client.create();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    let characters = 0;
    try {
      const result = await sandbox.commands.run("head -c 100000000 /dev/zero | tr '\\0' a", {
        collectOutput: false,
        onStdout: (chunk) => {
          characters += chunk.length;
        },
      });
      expect(result.exitCode).toBe(0);
    } finally {
      clearInterval(sampler);
    }
    expect(characters).toBe(100_000_000);
    expect(peak - before).toBeLessThan(60 * 1024 * 1024);
    await sandbox.destroy();
  });

  it("spawned processes are listed, re-attached and killed through the facade", async () => {
    const sandbox = await client.create();
    const proc = await sandbox.commands.spawn("echo up; sleep 30");
    const first = await proc.stdout[Symbol.asyncIterator]().next();
    expect(first.value).toBe("up\n");
    expect((await sandbox.commands.list()).find((p) => p.pid === proc.pid)?.running).toBe(true);
    const other = createSandboxClient({ provider: local({ root, isolation }) });
    const attached = await (await other.connect(sandbox.id)).commands.connect(proc.pid);
    // Without a signal: SIGTERM first, SIGKILL only for a process still there after the grace period.
    await sandbox.commands.kill(proc.pid);
    expect(await attached.wait()).toEqual({ exitCode: 143, signal: "SIGTERM" });
    await other.dispose();
    await sandbox.destroy();
  });

  it("refuses resources it cannot enforce before creating anything", async () => {
    // Refused at compile time too (local honours no resources), so the calls are typed as any spec.
    expect(await codeOf(client.create({ resources: { memoryMB: 256 } } as never))).toBe("Validation");
    expect(await codeOf(client.create({ resources: { vcpus: 1 } } as never))).toBe("Validation");
  });

  it("client.reap() stops sandboxes whose time to live has passed", async () => {
    const sandbox = await client.create({ ttlMs: 60_000, metadata: { reap: "yes" } });
    await sandbox.setTimeout(1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const reaped = await client.reap();
    expect(reaped.map((info) => info.id)).toContain(sandbox.id);
    expect((await sandbox.getInfo()).state).toBe("stopped");
    await sandbox.destroy();
  });

  it("gates egress control on the isolation", async () => {
    const sandbox = await client.create();
    if (isolation === "none") {
      expect(sandbox.network).toBeUndefined();
      expect(await codeOf(client.create({ network: { egress: "block-all" } }))).toBe("Validation");
    } else {
      await sandbox.network!.setEgress("block-all");
      const result = await sandbox.commands.run("cat /proc/net/dev | tail -n +3 | wc -l");
      expect(result.stdout.trim()).toBe("1");
    }
    await sandbox.destroy();
  });

  it("watches files through the facade", async () => {
    const sandbox = await client.create();
    await sandbox.files.mkdir("w");
    const events: string[] = [];
    const watcher = await sandbox.files.watch("w", (event) =>
      events.push(`${event.type} ${event.path.split("/").pop()}`),
    );
    await sandbox.commands.run("echo x > w/a");
    expect(await eventually(() => events.includes("create a"), 5_000)).toBe(true);
    await watcher.close();
    await sandbox.destroy();
  });
});

describe("primitives-only without isolation", () => {
  it("keeps each sandbox's emulated background processes to itself", async () => {
    // Every unisolated sandbox sees the host's /tmp: the emulations' state must not be shared through it.
    const client = createSandboxClient({
      provider: local({ root: `${state.home}/emulated`, isolation: "none" }),
      primitivesOnly: true,
    });
    const [one, other] = await Promise.all([client.create(), client.create()]);
    try {
      const proc = await one.commands.spawn("sleep 30");
      expect((await one.commands.list()).map((p) => p.pid)).toContain(proc.pid);
      expect((await other.commands.list()).map((p) => p.pid)).not.toContain(proc.pid);
      await proc.kill("SIGKILL");
    } finally {
      await Promise.all([one.destroy(), other.destroy()]);
      await client.dispose();
    }
  });
});
