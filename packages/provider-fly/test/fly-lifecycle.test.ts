/**
 * Every route the adapter calls, through the core client, against the Fly Machines emulator: what is
 * sent (paths, query parameters, the machine config Fly stores) and what a user observes (live state,
 * metadata filters, stop resetting files as Fly does, suspend keeping processes, declared ports).
 */
import { createSandboxClient } from "@sbox/core";
import { SandboxError } from "@sbox/core/spec";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { FlyMachine } from "../src/index.js";
import { FLY_MANAGED_METADATA_KEY, fly, sandboxStateOf } from "../src/index.js";
import { type FlyTestServer, machineRuns, startFlyTestServer, testProvider } from "./fly-test-env.js";

let server: FlyTestServer;

beforeAll(async () => {
  server = await startFlyTestServer();
});

afterAll(async () => {
  await server.close();
});

const client = () => createSandboxClient({ provider: testProvider(server) });
const nativeId = (id: string): string => id.slice("fly:".length);
const since = (from: number) => server.requests.slice(from);

async function rejection(promise: PromiseLike<unknown>): Promise<SandboxError> {
  try {
    await promise;
  } catch (error) {
    expect(SandboxError.isInstance(error)).toBe(true);
    return error as SandboxError;
  }
  throw new Error("expected a rejection, but the promise resolved");
}

describe("create", () => {
  test("sends image, region, guest, env, metadata and services as Fly stores them, then waits for started", async () => {
    const from = server.requests.length;
    const sandbox = await client().create({
      template: "registry-1.docker.io/library/debian:bookworm",
      name: "sbox-route-test",
      region: "fra",
      resources: { vcpus: 2, memoryMB: 1024 },
      env: { GREETING: 'it\'s "quoted" $(x)' },
      metadata: { team: "a b", "sbox-test": "create" },
      ports: [8080],
    });
    try {
      const routes = since(from).map((r) => `${r.method} ${r.route}`);
      expect(routes.slice(0, 2)).toEqual(["POST create", "GET wait"]);
      expect(since(from)[0]!.path).toBe(`/v1/apps/${server.app}/machines`);
      const info = await sandbox.getInfo();
      const raw = info.raw as FlyMachine;
      expect(raw.region).toBe("fra");
      expect(raw.name).toBe("sbox-route-test");
      expect(raw.config?.image).toBe("registry-1.docker.io/library/debian:bookworm");
      expect(raw.config?.guest).toEqual({ cpu_kind: "shared", cpus: 2, memory_mb: 1024 });
      expect(raw.config?.env).toEqual({ GREETING: 'it\'s "quoted" $(x)' });
      expect(raw.config?.services).toEqual([
        {
          protocol: "tcp",
          internal_port: 8080,
          ports: [{ port: 8080, handlers: ["tls", "http"] }],
          autostart: false,
          autostop: "off",
        },
      ]);
      expect(info.metadata).toEqual({
        team: "a b",
        "sbox-test": "create",
        [FLY_MANAGED_METADATA_KEY]: "true",
      });
      expect(info.state).toBe("running");
      expect(info.createdAt).toBeInstanceOf(Date);
    } finally {
      await sandbox.destroy();
    }
  });

  test("Fly's resource limits fail before any request: whole CPUs, memory in 256 MiB steps", async () => {
    const c = client();
    for (const resources of [{ vcpus: 1.5 }, { memoryMB: 300 }, { memoryMB: 128 }]) {
      const from = server.requests.length;
      const error = await rejection(c.create({ resources }));
      expect(error.code).toBe("Validation");
      expect(since(from)).toEqual([]);
    }
  });

  test("a spec field Fly cannot honour (disk size) is refused before any request", async () => {
    const from = server.requests.length;
    const error = await rejection(client().create({ resources: { diskMB: 1024 } }));
    expect(error.code).toBe("Validation");
    expect(since(from)).toEqual([]);
  });

  test("the default image and region of the options are used when the spec names none", async () => {
    const c = createSandboxClient({
      provider: testProvider(server, { image: "registry-1.docker.io/library/busybox:stable", region: "syd" }),
    });
    const sandbox = await c.create();
    try {
      const raw = (await sandbox.getInfo()).raw as FlyMachine;
      expect(raw.config?.image).toBe("registry-1.docker.io/library/busybox:stable");
      expect(raw.region).toBe("syd");
      expect(raw.config?.init?.exec?.[0]).toBe("/bin/sh");
    } finally {
      await sandbox.destroy();
    }
  });
});

describe("get, list, connect", () => {
  test("list filters by metadata with metadata.{key}={value} and leaves out machines sbox did not create", async () => {
    const tag = `list-${Date.now()}`;
    const c = client();
    const [a, b] = await Promise.all([
      c.create({ metadata: { "fly-test-tag": tag, role: "a" } }),
      c.create({ metadata: { "fly-test-tag": tag, role: "b" } }),
    ]);
    // A machine of the same app created by someone else, with the same label but not managed by sbox.
    const foreign = (await (
      await fetch(`${server.url}/v1/apps/${server.app}/machines`, {
        method: "POST",
        headers: { Authorization: server.token, "Content-Type": "application/json" },
        body: JSON.stringify({ config: { image: "nginx", metadata: { "fly-test-tag": tag, role: "a" } } }),
      })
    ).json()) as FlyMachine;
    try {
      const from = server.requests.length;
      const onlyA = [];
      for await (const info of c.list({ metadata: { "fly-test-tag": tag, role: "a" } })) onlyA.push(info.id);
      expect(onlyA).toEqual([a!.id]);
      const query = new URLSearchParams(since(from).find((r) => r.route === "list")!.query);
      expect(query.get("metadata.fly-test-tag")).toBe(tag);
      expect(query.get("metadata.role")).toBe("a");
      expect(query.get(`metadata.${FLY_MANAGED_METADATA_KEY}`)).toBe("true");
      const both = [];
      for await (const info of c.list({ metadata: { "fly-test-tag": tag } })) both.push(info);
      expect(both.map((i) => i.id).sort()).toEqual([a!.id, b!.id].sort());
      expect(both.every((i) => i.state === "running" && i.provider === "fly")).toBe(true);
    } finally {
      await Promise.all([a!.destroy(), b!.destroy()]);
      await fetch(`${server.url}/v1/apps/${server.app}/machines/${foreign.id}?force=true`, {
        method: "DELETE",
        headers: { Authorization: server.token },
      });
    }
  });

  test("connect reads the machine (GET) and a second client's handle runs commands with the create env", async () => {
    const c = client();
    const sandbox = await c.create({ env: { FROM_CREATE: "line1\nline2 'q'" } });
    try {
      const from = server.requests.length;
      const other = await client().connect(sandbox.id);
      expect(since(from).map((r) => `${r.method} ${r.route} ${r.path}`)).toEqual([
        `GET get /v1/apps/${server.app}/machines/${nativeId(sandbox.id)}`,
      ]);
      const argv = await other.commands.run(["printenv", "FROM_CREATE"]);
      expect(argv.stdout).toBe("line1\nline2 'q'\n");
      const overridden = await other.commands.run('printf %s "$FROM_CREATE"', {
        env: { FROM_CREATE: "own" },
      });
      expect(overridden.stdout).toBe("own");
    } finally {
      await sandbox.destroy();
    }
  });

  test("getInfo reads live state: another client's stop shows at once", async () => {
    const sandbox = await client().create();
    try {
      const other = await client().connect(sandbox.id);
      await other.stop();
      expect((await sandbox.getInfo()).state).toBe("stopped");
    } finally {
      await sandbox.destroy();
    }
  });
});

describe("exec", () => {
  test("sends argv (shell snippets as sh -c) with a timeout, and maps exit codes and signals", async () => {
    const provider = testProvider(server, { execTimeoutSeconds: 25 });
    const handle = await provider.doCreate({ env: { A: "1" } }, { signal: AbortSignal.timeout(30_000) });
    try {
      const signal = AbortSignal.timeout(30_000);
      const shell = await provider.doExec(handle, { command: { shell: "echo $((6*7)); exit 5" }, signal });
      expect(shell).toEqual({ stdout: "42\n", stderr: "", exitCode: 5 });
      const argv = await provider.doExec(handle, {
        command: { argv: ["printf", "%s|", "$HOME", "a b"] },
        signal,
      });
      expect(argv.stdout).toBe("$HOME|a b|");
      // Fly reports a death by signal with exit_signal; the provider turns it into 128+n and the name.
      server.emulator.faults.add({
        match: "POST /v1/apps/*/machines/*/exec",
        times: 1,
        kind: "respond",
        respond: () => ({ status: 200, body: { stdout: "", stderr: "", exit_code: -1, exit_signal: 15 } }),
      });
      const killed = await provider.doExec(handle, { command: { shell: "kill -TERM $$" }, signal });
      expect(killed.signal).toBe("SIGTERM");
      expect(killed.exitCode).toBe(143);
      const text = await provider.doExec(handle, {
        command: { shell: "cat" },
        stdin: new TextEncoder().encode("text stdin ünï\n"),
        signal,
      });
      expect(text.stdout).toBe("text stdin ünï\n");
      // `env A=1 ...` runs every command; a program whose name holds "=" must not be taken for one more.
      await provider.doExec(handle, {
        command: { shell: "printf '#!/bin/sh\\necho \"A=$A\"\\n' > x=y.sh; chmod +x x=y.sh" },
        signal,
      });
      const odd = await provider.doExec(handle, { command: { argv: ["./x=y.sh"] }, signal });
      expect(odd).toEqual({ stdout: "A=1\n", stderr: "", exitCode: 0 });
    } finally {
      await provider.doDestroy(handle, { signal: AbortSignal.timeout(30_000) });
    }
  });

  test("what Fly's exec cannot carry is refused clearly: binary stdin, a stream, a user", async () => {
    const provider = testProvider(server);
    const handle = await provider.doCreate({}, { signal: AbortSignal.timeout(30_000) });
    try {
      const signal = AbortSignal.timeout(30_000);
      const binary = await rejection(
        provider.doExec(handle, { command: { shell: "cat" }, stdin: new Uint8Array([0xff, 0xfe]), signal }),
      );
      expect(binary.code).toBe("Validation");
      const stream = await rejection(
        provider.doExec(handle, { command: { shell: "cat" }, stdin: new ReadableStream(), signal }),
      );
      expect(stream.code).toBe("Validation");
      const user = await rejection(
        provider.doExec(handle, { command: { shell: "id" }, user: "nobody", signal }),
      );
      expect(user.code).toBe("NotSupported");
    } finally {
      await provider.doDestroy(handle, { signal: AbortSignal.timeout(30_000) });
    }
  });

  test("the user API still takes binary stdin (the core feeds it from a file)", async () => {
    const sandbox = await client().create();
    try {
      const bytes = new Uint8Array([0, 1, 0xfe, 0xff, 10]);
      const od = await sandbox.commands.run('od -An -v -tx1 | tr -d " \\n"', { stdin: bytes });
      expect(od.stdout).toBe("0001feff0a");
    } finally {
      await sandbox.destroy();
    }
  });
});

describe("stop, suspend, start, destroy", () => {
  test("stop posts /stop under a lease and waits for stopped by version; start resets files as Fly does", async () => {
    const sandbox = await client().create();
    try {
      await sandbox.files.write("kept.txt", "before stop");
      const from = server.requests.length;
      await sandbox.stop();
      const stopCalls = since(from);
      expect(stopCalls.map((r) => `${r.method} ${r.route}`)).toEqual([
        "GET get",
        "POST lease",
        "POST stop",
        "DELETE lease",
        "GET wait",
      ]);
      const wait = new URLSearchParams(stopCalls[4]!.query);
      expect(wait.get("state")).toBe("stopped");
      expect(wait.get("version")).toMatch(/^[0-9A-Z]{26}$/);
      expect(await machineRuns(server, nativeId(sandbox.id), "sleep 3600")).toBe(false);
      await sandbox.stop(); // already stopped: no second POST
      expect(since(from).filter((r) => r.route === "stop")).toHaveLength(1);
      const resumeFrom = server.requests.length;
      await sandbox.resume();
      expect(since(resumeFrom).map((r) => `${r.method} ${r.route}`)).toEqual([
        "GET get",
        "POST lease",
        "POST start",
        "DELETE lease",
        "GET wait",
      ]);
      expect((await sandbox.getInfo()).state).toBe("running");
      expect(await sandbox.files.exists("kept.txt")).toBe(false);
    } finally {
      await sandbox.destroy();
    }
  });

  test("pause suspends (processes frozen, still there) and resume starts them again", async () => {
    const sandbox = await client().create();
    try {
      const proc = await sandbox.commands.spawn(
        "i=0; while :; do i=$((i+1)); echo $i > count; sleep 0.05; done",
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      const from = server.requests.length;
      await sandbox.pause();
      // The core may poll the background process meanwhile: its execs are not part of pause().
      const calls = since(from).filter((r) => r.route !== "exec");
      expect(calls.map((r) => `${r.method} ${r.route}`)).toEqual([
        "GET get",
        "POST lease",
        "POST suspend",
        "DELETE lease",
        "GET wait",
      ]);
      expect(new URLSearchParams(calls[4]!.query).get("state")).toBe("suspended");
      expect((await sandbox.getInfo()).state).toBe("paused");
      const error = await rejection(sandbox.commands.run("true"));
      expect(error.code).toBe("InvalidState");
      await sandbox.resume();
      // The counter kept its value while frozen and counts on after resume: the processes survived.
      const before = Number((await sandbox.commands.run("cat count")).stdout);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(Number((await sandbox.commands.run("cat count")).stdout)).toBeGreaterThan(before);
      expect((await sandbox.commands.list()).find((p) => p.pid === proc.pid)?.running).toBe(true);
      await proc.kill();
    } finally {
      await sandbox.destroy();
    }
  });

  test("pausing a stopped machine is InvalidState", async () => {
    const sandbox = await client().create();
    try {
      await sandbox.stop();
      const error = await rejection(sandbox.pause());
      expect(error.code).toBe("InvalidState");
    } finally {
      await sandbox.destroy();
    }
  });

  test("destroy sends DELETE ?force=true under a lease and the machine's sandbox goes with it", async () => {
    const sandbox = await client().create();
    await sandbox.commands.spawn("sleep 300");
    const id = nativeId(sandbox.id);
    expect(await machineRuns(server, id, "sleep 300")).toBe(true);
    const from = server.requests.length;
    await sandbox.destroy();
    const call = since(from).find((r) => r.route === "delete")!;
    expect(call.method).toBe("DELETE");
    expect(call.path).toBe(`/v1/apps/${server.app}/machines/${id}`);
    expect(new URLSearchParams(call.query).get("force")).toBe("true");
    expect(server.machineSandbox(id)).toBeUndefined();
    expect((await sandbox.getInfo()).state).toBe("destroyed");
    const error = await rejection(client().connect(sandbox.id));
    expect(error.code).toBe("NotFound");
  });
});

describe("ports (declaredPorts)", () => {
  test("a port declared at create is exposed at the preview URL; others are refused with the reason", async () => {
    const sandbox = await client().create({ ports: [18_765] });
    try {
      const ports = sandbox.ports!;
      const info = await ports.expose(18_765);
      expect(info).toEqual({ port: 18_765, url: server.proxyUrl(server.app, 18_765) });
      expect(await ports.list()).toEqual([info]);
      const undeclared = await rejection(ports.expose(18_766));
      expect(undeclared.code).toBe("Validation");
      expect(undeclared.message).toContain("ports: [18766]");
      const isPrivate = await rejection(ports.expose(18_765, { private: true }));
      expect(isPrivate.code).toBe("NotSupported");
    } finally {
      await sandbox.destroy();
    }
  });

  test("the default preview URL is https://{app}.fly.dev:{port}", async () => {
    const provider = fly({ apiToken: server.token, appName: server.app, apiBaseUrl: server.url });
    const handle = await provider.doCreate({ ports: [8080, 443] }, { signal: AbortSignal.timeout(30_000) });
    try {
      const signal = AbortSignal.timeout(30_000);
      expect(await provider.doListPorts!(handle, { signal })).toEqual([
        { port: 8080, url: `https://${server.app}.fly.dev:8080` },
        { port: 443, url: `https://${server.app}.fly.dev` },
      ]);
    } finally {
      await provider.doDestroy(handle, { signal: AbortSignal.timeout(30_000) });
    }
  });
});

describe("state mapping", () => {
  test("every Fly machine state maps to a sandbox state", () => {
    const expected: Record<string, string> = {
      created: "stopped",
      creating: "starting",
      starting: "starting",
      started: "running",
      restarting: "starting",
      updating: "starting",
      replacing: "starting",
      stopping: "stopped",
      stopped: "stopped",
      suspending: "paused",
      suspended: "paused",
      destroying: "destroyed",
      destroyed: "destroyed",
      failed: "error",
      launch_failed: "error",
      replaced: "unknown",
      migrated: "unknown",
      "something-new": "unknown",
    };
    for (const [fly, sandbox] of Object.entries(expected)) expect(sandboxStateOf(fly), fly).toBe(sandbox);
  });
});
