/**
 * What the acceptance asks of the adapter, checked on the Daytona emulator's own records: a ttl
 * reaches Daytona as its ttl, auto-stop and auto-delete intervals; destroy is idempotent; a create whose
 * answer is lost after the sandbox exists leaves no sandbox behind once `client.reap()` has run; options
 * and spec fields Daytona cannot take are refused before any request.
 */
import { createSandboxClient } from "@sbox/core";
import { startDaytonaEmulator } from "@sbox/emulators/daytona";
import { afterAll, describe, expect, test } from "vitest";
import { type DaytonaSandboxNative, daytona, intervalsFor } from "../src/index.js";
import { TEST_API_KEY, testEmulatorOptions, testProvider } from "./daytona-test-env.js";

const emulator = await startDaytonaEmulator(testEmulatorOptions());
afterAll(() => emulator.close());

/** Sandboxes not destroyed nor on their way out (Daytona deletes in the background: `destroying`). */
const live = () =>
  emulator
    .sandboxIds()
    .filter((id) => !["destroyed", "destroying"].includes(emulator.sandboxRecord(id)?.state ?? ""));

describe("ttl", () => {
  test("a ttl given at create reaches Daytona as ttlMinutes, autoStopInterval and autoDeleteInterval", async () => {
    const client = createSandboxClient({ provider: testProvider(emulator) });
    const sandbox = await client.create({ ttlMs: 150_000, metadata: { suite: "ttl" } });
    try {
      const record = emulator.sandboxRecord(sandbox.id.replace(/^daytona:/, ""));
      expect(record?.createRequest).toMatchObject({
        ttlMinutes: 3,
        autoStopInterval: 3,
        autoDeleteInterval: 0,
      });
      expect(record).toMatchObject({ ttlMinutes: 3, autoStopInterval: 3, autoDeleteInterval: 0 });
      const info = await sandbox.getInfo();
      expect(info.metadata).toEqual({ suite: "ttl" });
      const left = (info.expiresAt?.getTime() ?? 0) - Date.now();
      expect(left).toBeGreaterThan(100_000);
      expect(left).toBeLessThanOrEqual(150_000);
    } finally {
      await sandbox.destroy();
    }
  });

  test("without a ttl only the configured intervals are sent", async () => {
    const client = createSandboxClient({ provider: testProvider(emulator, { autoStopMinutes: 7 }) });
    const sandbox = await client.create();
    try {
      const record = emulator.sandboxRecord(sandbox.id.replace(/^daytona:/, ""));
      expect(record?.createRequest).toMatchObject({ autoStopInterval: 7 });
      expect(record?.createRequest).not.toHaveProperty("ttlMinutes");
      expect(record?.createRequest).not.toHaveProperty("autoDeleteInterval");
    } finally {
      await sandbox.destroy();
    }
  });

  test("minutes are whole and at least one; the delete-after-stop delay is an option", () => {
    const options = {
      autoStopMinutes: undefined,
      autoArchiveMinutes: undefined,
      autoDeleteMinutes: undefined,
    };
    expect(intervalsFor(1, { ...options, expiredDeleteAfterMinutes: 0 } as never)).toEqual({
      ttlMinutes: 1,
      autoStopInterval: 1,
      autoDeleteInterval: 0,
    });
    expect(intervalsFor(60_001, { ...options, expiredDeleteAfterMinutes: 30 } as never)).toEqual({
      ttlMinutes: 2,
      autoStopInterval: 2,
      autoDeleteInterval: 30,
    });
  });
});

describe("destroy", () => {
  test("destroy is idempotent: a second destroy, and one from another client, succeed", async () => {
    const client = createSandboxClient({ provider: testProvider(emulator) });
    const sandbox = await client.create();
    const again = await createSandboxClient({ provider: testProvider(emulator) }).connect(sandbox.id);
    await sandbox.destroy();
    await sandbox.destroy();
    await again.destroy();
    expect((await sandbox.getInfo()).state).toBe("destroyed");
    await expect(client.connect(sandbox.id)).rejects.toMatchObject({ code: "NotFound" });
  });
});

describe("image", () => {
  test("with the image option a sandbox is built FROM the image (spec.template names one) and sized as asked", async () => {
    const client = createSandboxClient({ provider: testProvider(emulator, { image: "debian:bookworm" }) });
    const sandbox = await client.create({ resources: { vcpus: 2, memoryMB: 1536, diskMB: 4096 } });
    try {
      const record = emulator.sandboxRecord(sandbox.id.replace(/^daytona:/, ""));
      expect(record?.createRequest).toMatchObject({
        buildInfo: { dockerfileContent: "FROM debian:bookworm\n" },
        cpu: 2,
        memory: 2,
        disk: 4,
      });
      expect(record?.createRequest).not.toHaveProperty("snapshot");
      expect(record).toMatchObject({ state: "started", cpu: 2, memory: 2, disk: 4 });
      expect((await sandbox.commands.run("echo built")).stdout).toBe("built\n");
    } finally {
      await sandbox.destroy();
    }
    const other = await client.create({ template: "debian:bookworm-slim" });
    try {
      expect(emulator.sandboxRecord(other.id.replace(/^daytona:/, ""))?.createRequest).toMatchObject({
        buildInfo: { dockerfileContent: "FROM debian:bookworm-slim\n" },
      });
    } finally {
      await other.destroy();
    }
  });

  test("an image that fails to build is an error and leaves no sandbox; resources need the image option", async () => {
    const client = createSandboxClient({ provider: testProvider(emulator, { image: "debian:bookworm" }) });
    const before = live().length;
    const failure = await client.create({ template: "no-such/image:1" }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ name: "SandboxError" });
    expect(String((failure as Error).message)).toMatch(/build_failed/);
    expect(live().length).toBe(before);
    const requests = emulator.log.length;
    const bySnapshot = createSandboxClient({ provider: testProvider(emulator) });
    await expect(bySnapshot.create({ resources: { vcpus: 2 } })).rejects.toMatchObject({
      code: "Validation",
    });
    expect(emulator.log.slice(requests).filter((e) => e.method === "POST")).toEqual([]);
    expect(() => daytona({ apiKey: TEST_API_KEY, image: "a", snapshot: "b" })).toThrow(/snapshot or image/);
  });
});

describe("archive", () => {
  test("a sandbox archived through Daytona's API reads as stopped and resume() starts it with its files", async () => {
    const client = createSandboxClient({ provider: testProvider(emulator) });
    const sandbox = await client.create();
    try {
      await sandbox.files.write("/tmp/kept.txt", "kept across archive");
      await sandbox.stop();
      await (sandbox.raw() as DaytonaSandboxNative).archive();
      expect(emulator.sandboxRecord(sandbox.id.replace(/^daytona:/, ""))?.state).toBe("archived");
      expect((await sandbox.getInfo()).state).toBe("stopped");
      await sandbox.resume();
      expect((await sandbox.getInfo()).state).toBe("running");
      expect(await sandbox.files.readText("/tmp/kept.txt")).toBe("kept across archive");
    } finally {
      await sandbox.destroy();
    }
  });
});

describe("ports", () => {
  test("a private port answers with its token in X-Daytona-Preview-Token; a public one is a 24 h signed URL", {
    timeout: 120_000,
  }, async () => {
    const client = createSandboxClient({ provider: testProvider(emulator) });
    const sandbox = await client.create();
    try {
      const port = 20_000 + Math.floor(Math.random() * 10_000);
      await sandbox.files.write("/tmp/site/index.txt", "served");
      const server = await sandbox.commands.spawn([
        "python3",
        "-m",
        "http.server",
        String(port),
        "--bind",
        "0.0.0.0",
        "--directory",
        "/tmp/site",
      ]);
      const ports = sandbox.ports!;
      const open = await ports.expose(port);
      expect(open.token).toBeUndefined();
      const signedRequest = emulator.log
        .filter((e) => e.url.includes(`/ports/${port}/signed-preview-url`))
        .at(-1);
      expect(new URL(signedRequest!.url, "http://x").searchParams.get("expiresInSeconds")).toBe("86400");
      const closed = await ports.expose(port, { private: true });
      expect(closed.token).toMatch(/.+/);
      const deadline = Date.now() + 30_000;
      let last = "";
      while (Date.now() < deadline) {
        const answer = await fetch(`${closed.url}/index.txt`, {
          headers: { "X-Daytona-Preview-Token": closed.token! },
        });
        last = `${answer.status} ${await answer.text()}`;
        if (last === "200 served") break;
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      expect(last).toBe("200 served");
      expect((await fetch(`${open.url}/index.txt`)).status).toBe(200);
      expect((await fetch(`${closed.url}/index.txt`)).status).toBe(401);
      await expect(ports.expose(0)).rejects.toMatchObject({ code: "Validation" });
      await expect(ports.expose(70_000)).rejects.toMatchObject({ code: "Validation" });
      await server.kill();
    } finally {
      await sandbox.destroy();
    }
  });
});

describe("interrupted create", () => {
  test("a create whose answer is lost after the sandbox exists leaves nothing once reap() ran", async () => {
    const before = new Set(emulator.sandboxIds());
    const client = createSandboxClient({ provider: testProvider(emulator) });
    emulator.faults.add({ match: "POST /api/sandbox", kind: "error", status: 502, phase: "after", times: 1 });
    await expect(client.create({ ttlMs: 60_000 })).rejects.toMatchObject({ provider: "daytona" });
    // The emulator did make a sandbox for that request...
    const made = emulator.log.filter((e) => e.route === "POST /sandbox" && e.fault === "error");
    expect(made).toHaveLength(1);
    await client.reap();
    // ...and nothing of it is left.
    const leftover = live().filter((id) => !before.has(id));
    expect(leftover).toEqual([]);
    const created = emulator.sandboxIds().filter((id) => !before.has(id));
    expect(created.length).toBe(1);
    const deadline = Date.now() + 60_000;
    while (emulator.sandboxRecord(created[0]!)?.state !== "destroyed" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(emulator.sandboxRecord(created[0]!)?.state).toBe("destroyed");
  });
});

describe("options", () => {
  test("unknown options and bad values are Validation errors that never show the key", () => {
    expect(() => daytona({ apiKey: TEST_API_KEY, bogus: 1 } as never)).toThrow(/bogus/);
    expect(() => daytona({ apiKey: TEST_API_KEY, autoStopMinutes: 1.5 })).toThrow(/autoStopMinutes/);
    try {
      daytona({ apiKey: TEST_API_KEY, requestTimeoutMs: -1 });
    } catch (error) {
      expect(String(error)).not.toContain(TEST_API_KEY);
      expect(error).toMatchObject({ code: "Validation" });
    }
  });

  test("a spec field Daytona cannot take is refused before any request", async () => {
    const client = createSandboxClient({ provider: testProvider(emulator) });
    const requests = emulator.log.length;
    await expect(client.create({ ports: [8080] })).rejects.toMatchObject({ code: "Validation" });
    // The type already refuses it (region is unsupported); at run time too.
    await expect(client.create({ region: "eu" } as never)).rejects.toMatchObject({ code: "Validation" });
    expect(emulator.log.length).toBe(requests);
  });
});

describe("files", () => {
  test("whole files go through the toolbox's bulk routes: binary-exact, NotFound, a directory is Validation", async () => {
    const client = createSandboxClient({ provider: testProvider(emulator) });
    const sandbox = await client.create();
    try {
      const bytes = new Uint8Array(3 * 1024 * 1024 + 7);
      for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + (i >> 8)) & 0xff;
      const routes = () => emulator.log.map((entry) => entry.route);
      const before = routes().length;
      await sandbox.files.write("/tmp/sbox-daytona/nested/data.bin", bytes, { mode: 0o600 });
      // Buffer.equals: a deep toEqual over 3 MiB would hold the event loop (and the emulator in it) for a minute.
      const back = await sandbox.files.read("/tmp/sbox-daytona/nested/data.bin");
      expect(Buffer.from(back).equals(Buffer.from(bytes))).toBe(true);
      const used = routes().slice(before);
      expect(used).toContain("toolbox POST /files/bulk-upload");
      expect(used).toContain("toolbox POST /files/bulk-download");
      expect(used).toContain("toolbox POST /files/permissions");
      const listed = await sandbox.commands.run("stat -c %a /tmp/sbox-daytona/nested/data.bin");
      expect(listed.stdout.trim()).toBe("600");
      await expect(sandbox.files.read("/tmp/sbox-daytona/missing")).rejects.toMatchObject({
        code: "NotFound",
      });
      await expect(sandbox.files.read("/tmp/sbox-daytona")).rejects.toMatchObject({ code: "Validation" });
      await sandbox.files.write("/tmp/sbox-daytona/empty", new Uint8Array(0));
      expect(await sandbox.files.read("/tmp/sbox-daytona/empty")).toEqual(new Uint8Array(0));
    } finally {
      await sandbox.destroy();
    }
  });
});

describe("pty", () => {
  test("a terminal is Daytona's own pty session (env, cwd, kill deletes it); a command is refused", {
    timeout: 120_000,
  }, async () => {
    const client = createSandboxClient({ provider: testProvider(emulator) });
    const sandbox = await client.create({});
    try {
      let output = "";
      const decoder = new TextDecoder();
      const term = await sandbox.pty!.create({
        cols: 80,
        rows: 24,
        cwd: "/tmp",
        env: { SBOX_PTY: "x'$(y)\"" },
        onData: (data) => {
          output += decoder.decode(data, { stream: true });
        },
      });
      await term.write('printf "[%s|%s]\\n" "$SBOX_PTY" "$PWD"\n');
      const deadline = Date.now() + 15_000;
      while (!output.includes(`[x'$(y)"|/tmp]`) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(output).toContain(`[x'$(y)"|/tmp]`);
      const native = sandbox.raw() as DaytonaSandboxNative;
      const sessions = await native.process.listPtySessions();
      expect(sessions.filter((s) => s.active)).toHaveLength(1);
      await term.kill();
      await term.wait();
      expect((await native.process.listPtySessions()).filter((s) => s.active)).toHaveLength(0);
      await expect(
        sandbox.pty!.create({ cols: 80, rows: 24, command: "top", onData: () => undefined }),
      ).rejects.toMatchObject({ code: "Validation" });
    } finally {
      await sandbox.destroy();
    }
  });
});
