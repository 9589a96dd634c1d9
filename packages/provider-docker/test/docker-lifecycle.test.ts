import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { DriverSandbox, DriverSandboxInfo } from "@sbox/core/spec";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { DockerSandboxNative } from "../src/index.js";
import { docker } from "../src/index.js";
import {
  call,
  ENGINE,
  ensureTestImage,
  leftovers,
  RUN_ID,
  RUN_LABEL,
  rawDocker,
  removeLeftovers,
  SKIP_NOTE,
  TEST_IMAGE,
  text,
} from "./docker-test-env.js";

const provider = docker({ image: TEST_IMAGE, labels: { [RUN_LABEL]: RUN_ID } });
/** A second provider instance: what another OS process would see. */
const other = docker({ image: TEST_IMAGE, labels: { [RUN_LABEL]: RUN_ID } });

type Box = DriverSandbox<DockerSandboxNative>;
const made: Box[] = [];

async function create(spec: Parameters<typeof provider.doCreate>[0] = {}): Promise<Box> {
  const box = await provider.doCreate(spec, call(120_000));
  made.push(box);
  return box;
}

async function sh(s: Box, script: string) {
  const result = await provider.doExec(s, { command: { shell: script }, ...call() });
  return { stdout: text(result.stdout), stderr: text(result.stderr), exitCode: result.exitCode };
}

async function collect(iterable: AsyncIterable<DriverSandboxInfo>): Promise<DriverSandboxInfo[]> {
  const out: DriverSandboxInfo[] = [];
  for await (const info of iterable) out.push(info);
  return out;
}

describe.skipIf(!ENGINE.ok)(`docker lifecycle${SKIP_NOTE}`, () => {
  beforeAll(() => ensureTestImage());

  afterAll(async () => {
    for (const box of made) await provider.doDestroy(box, call()).catch(() => undefined);
    expect(await removeLeftovers()).toBe(0);
    // Snapshot and fork images inherit the run label from their container: none may be left.
    const images = await rawDocker().listImages({ filters: { label: [`${RUN_LABEL}=${RUN_ID}`] } });
    for (const image of images)
      await rawDocker()
        .getImage(image.Id)
        .remove({ force: true })
        .catch(() => undefined);
    expect(images.map((i) => i.RepoTags)).toEqual([]);
  });

  test("create: running, labelled, under an init process, with the requested limits enforced by the engine", async () => {
    const box = await create({
      name: "limits",
      metadata: { team: "a b", "odd key": "v=1" },
      resources: { memoryMB: 64, vcpus: 0.5 },
    });
    const info = await provider.doGetInfo(box, call());
    expect(info).toMatchObject({ id: box.id, state: "running", metadata: { team: "a b", "odd key": "v=1" } });
    expect(info.createdAt).toBeInstanceOf(Date);
    const inspect = await box.native.inspect();
    expect(inspect.HostConfig).toMatchObject({
      Init: true,
      Memory: 64 * 1024 * 1024,
      NanoCpus: 5e8,
      PidsLimit: 4096,
    });
    // The limit seen from inside the sandbox (cgroup v1 or v2).
    const limit = await sh(
      box,
      "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
    );
    expect(Number(limit.stdout.trim())).toBe(64 * 1024 * 1024);
    // A process that needs more than the limit does not get it (dd allocates one 200 MiB block).
    const oom = await sh(box, "dd if=/dev/zero of=/dev/null bs=200M count=1 2>/dev/null; echo $?");
    expect(oom.stdout.trim()).not.toBe("0");
    expect(
      (await sh(box, "dd if=/dev/zero of=/dev/null bs=8M count=1 2>/dev/null; echo $?")).stdout.trim(),
    ).toBe("0");
    const metrics = await provider.doMetrics!(box, call());
    expect(metrics.memoryLimitBytes).toBe(64 * 1024 * 1024);
    expect(metrics.memoryBytes).toBeGreaterThan(0);
    expect(metrics.cpuPercent).toBeGreaterThanOrEqual(0);
    expect(metrics.at).toBeInstanceOf(Date);
  });

  test("the pids limit is enforced", async () => {
    const limited = docker({ image: TEST_IMAGE, labels: { [RUN_LABEL]: RUN_ID }, pidsLimit: 16 });
    const box = await limited.doCreate({}, call());
    made.push(box);
    const result = await sh(
      box,
      "for i in $(seq 1 40); do sleep 30 & done 2>/dev/null; sleep 0.2; ps -o pid | wc -l",
    );
    expect(Number(result.stdout.trim())).toBeLessThanOrEqual(17);
    await limited.doDestroy(box, call());
  });

  test("list and connect find our sandboxes from another provider instance, filtered, and only ours", async () => {
    const a = await create({ metadata: { group: RUN_ID, role: "a" } });
    const b = await create({ metadata: { group: RUN_ID, role: "b" } });
    const foreign = await rawDocker().createContainer({
      Image: TEST_IMAGE,
      Cmd: ["sleep", "60"],
      Labels: { [RUN_LABEL]: RUN_ID },
    });
    try {
      const all = await collect(other.doList!({ metadata: { group: RUN_ID } }, call()));
      expect(all.map((i) => i.id).sort()).toEqual([a.id, b.id].sort());
      const onlyB = await collect(other.doList!({ metadata: { group: RUN_ID, role: "b" } }, call()));
      expect(onlyB.map((i) => i.id)).toEqual([b.id]);
      expect(await collect(other.doList!({ metadata: { group: RUN_ID }, limit: 1 }, call()))).toHaveLength(1);
      expect(
        await collect(other.doList!({ metadata: { group: RUN_ID }, state: "paused" }, call())),
      ).toHaveLength(0);
      const again = await other.doConnect(a.id, call());
      expect(text((await other.doExec(again, { command: { shell: "echo hi" }, ...call() })).stdout)).toBe(
        "hi\n",
      );
      await expect(other.doConnect(foreign.id, call())).rejects.toMatchObject({ code: "NotFound" });
      // A provider with other labels does not see these sandboxes.
      const stranger = docker({ labels: { [RUN_LABEL]: "someone-else" } });
      await expect(stranger.doConnect(a.id, call())).rejects.toMatchObject({ code: "NotFound" });
    } finally {
      await foreign.remove({ force: true });
    }
  });

  test("stop keeps files and resume brings them back; pause freezes, exec then says InvalidState", async () => {
    const box = await create();
    await sh(box, "echo kept > /tmp/kept; sleep 1000 >/dev/null 2>&1 &");
    await provider.doPause!(box, call());
    expect((await provider.doGetInfo(box, call())).state).toBe("paused");
    await expect(sh(box, "true")).rejects.toMatchObject({ code: "InvalidState" });
    await provider.doResume!(box, call());
    // Memory kept: the background process still runs.
    expect((await sh(box, "ps -o args | grep -c '[s]leep 1000'")).stdout.trim()).toBe("1");
    await provider.doStop!(box, call());
    expect((await provider.doGetInfo(box, call())).state).toBe("stopped");
    await expect(sh(box, "true")).rejects.toMatchObject({ code: "InvalidState" });
    await expect(provider.doPause!(box, call())).rejects.toMatchObject({ code: "InvalidState" });
    await provider.doResume!(box, call());
    expect((await sh(box, "cat /tmp/kept")).stdout).toBe("kept\n");
  });

  test("pausing while commands start never wedges the container: every call settles, resume works", async () => {
    const box = await create();
    for (let round = 0; round < 3; round++) {
      const commands = Array.from({ length: 8 }, () =>
        sh(box, "echo x").then(
          (r) => r.exitCode,
          (e: { code?: string }) => e.code,
        ),
      );
      await new Promise((r) => setTimeout(r, round * 15));
      await provider.doPause!(box, call());
      // A command caught running stays frozen until resume (that is what pause means): resume first.
      await provider.doResume!(box, call());
      const outcomes = await Promise.all(commands);
      for (const outcome of outcomes) expect([0, "InvalidState"]).toContain(outcome);
      expect((await sh(box, "echo alive")).stdout).toBe("alive\n");
    }
  });

  test("ttl at create and setTimeout later are both seen by list from another instance", async () => {
    const before = Date.now();
    const box = await create({ ttlMs: 60_000, metadata: { ttl: RUN_ID } });
    const first = await provider.doGetInfo(box, call());
    expect(first.expiresAt!.getTime()).toBeGreaterThanOrEqual(before + 60_000 - 1000);
    await provider.doSetTimeout!(box, 5_000, call());
    const [listed] = await collect(other.doList!({ metadata: { ttl: RUN_ID } }, call()));
    expect(listed!.expiresAt!.getTime()).toBeLessThan(before + 30_000);
    await provider.doStop!(box, call());
    // Readable while stopped too.
    expect((await other.doGetInfo(box, call())).expiresAt!.getTime()).toBe(listed!.expiresAt!.getTime());
    await expect(provider.doSetTimeout!(box, -5, call())).rejects.toMatchObject({ code: "Validation" });
  });

  test("a published port answers HTTP at its URL; an unpublished one is a clear Validation error", async () => {
    const box = await create({ ports: [8080] });
    await sh(box, "mkdir -p /www && echo hello-port > /www/index.html && httpd -p 8080 -h /www");
    const port = await provider.doExposePort!(box, 8080, { ...call(), private: false });
    expect(port.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    let body = "";
    for (let i = 0; i < 50 && body === ""; i++) {
      body = await fetch(`${port.url}/index.html`)
        .then((r) => r.text())
        .catch(() => "");
      if (body === "") await new Promise((r) => setTimeout(r, 100));
    }
    expect(body).toBe("hello-port\n");
    expect(await provider.doListPorts!(box, call())).toEqual([port]);
    await expect(provider.doExposePort!(box, 9090, { ...call(), private: false })).rejects.toMatchObject({
      code: "Validation",
      message: expect.stringContaining("ports: [9090]"),
    });
  });

  test("egress: block-all at create really blocks, setEgress switches both ways, allow-lists are refused", async () => {
    const server = createServer((_req, res) => res.end("host-ok"));
    await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", resolve));
    const hostPort = (server.address() as AddressInfo).port;
    try {
      // The host as the sandbox sees it: its default gateway (docker0), never a public address.
      // busybox's static wget crashes resolving names; nc speaks enough HTTP.
      const probe = `gw=$(ip route | awk '/^default/ {print $3}'); printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 "$gw" ${hostPort} 2>/dev/null | tail -n 1 | grep . || echo blocked`;
      const open = await create();
      expect((await sh(open, probe)).stdout.trim()).toBe("host-ok");
      const closed = await create({ network: { egress: "block-all" } });
      expect((await sh(closed, probe)).stdout.trim()).toBe("blocked");
      await provider.doSetEgress!(closed, "allow-all", call());
      expect((await sh(closed, probe)).stdout.trim()).toBe("host-ok");
      await provider.doSetEgress!(open, "block-all", call());
      expect((await sh(open, probe)).stdout.trim()).toBe("blocked");
      await expect(provider.doSetEgress!(open, { allow: ["example.com"] }, call())).rejects.toMatchObject({
        code: "Validation",
      });
      await expect(
        provider.doCreate({ network: { egress: { allow: ["10.0.0.0/8"] } } }, call()),
      ).rejects.toMatchObject({
        code: "Validation",
      });
    } finally {
      server.close();
    }
  });

  test("snapshot, change, restore: the files come back; the snapshot is also a template", async () => {
    const box = await create({ metadata: { snap: "yes" } });
    await sh(box, "echo before > /tmp/state");
    const ref = await provider.doCreateSnapshot!(box, { ...call(), name: "first ✓" });
    expect(ref).toMatchObject({ name: "first ✓" });
    await sh(box, "echo after > /tmp/state; echo extra > /tmp/extra");
    expect((await provider.doListSnapshots!(box, call())).map((r) => r.id)).toEqual([ref.id]);
    await provider.doRestoreSnapshot!(box, ref, call());
    expect((await sh(box, "cat /tmp/state; test -e /tmp/extra || echo no-extra")).stdout).toBe(
      "before\nno-extra\n",
    );
    expect((await provider.doGetInfo(box, call())).metadata).toEqual({ snap: "yes" });
    const fromTemplate = await create({ template: ref.id });
    expect((await sh(fromTemplate, "cat /tmp/state")).stdout).toBe("before\n");
    // Metadata of the snapshotted sandbox is not inherited through the image labels.
    expect((await provider.doGetInfo(fromTemplate, call())).metadata).toEqual({});
    await provider.doDestroy(fromTemplate, call());
    await provider.doDeleteSnapshot!(box, ref, call());
    expect(await provider.doListSnapshots!(box, call())).toEqual([]);
    await provider.doDeleteSnapshot!(box, ref, call());
  });

  test("fork: N independent copies of the filesystem; the fork image goes with the last fork", async () => {
    const box = await create({ metadata: { fork: "src" } });
    await sh(box, "echo shared > /tmp/shared");
    const forks = await provider.doFork!(box, { ...call(), count: 2 });
    expect(forks).toHaveLength(2);
    made.push(...forks);
    await sh(forks[0]!, "echo one > /tmp/shared");
    expect((await sh(forks[1]!, "cat /tmp/shared")).stdout).toBe("shared\n");
    expect((await sh(box, "cat /tmp/shared")).stdout).toBe("shared\n");
    expect((await provider.doGetInfo(forks[0]!, call())).metadata).toEqual({ fork: "src" });
    const image = (await forks[0]!.native.inspect()).Image;
    for (const fork of forks) await provider.doDestroy(fork, call());
    await expect(rawDocker().getImage(image).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });

  test("named volumes are mounted and outlive the sandbox", async () => {
    const volume = `sbox-test-${RUN_ID}`;
    try {
      const writer = await create({ volumes: [{ name: volume, mountPath: "/data" }] });
      await sh(writer, "echo persisted > /data/file");
      await provider.doDestroy(writer, call());
      const reader = await create({ volumes: [{ name: volume, mountPath: "/data", readOnly: true }] });
      expect((await sh(reader, "cat /data/file")).stdout).toBe("persisted\n");
      expect((await sh(reader, "touch /data/x 2>/dev/null || echo read-only")).stdout).toBe("read-only\n");
      await provider.doDestroy(reader, call());
    } finally {
      await rawDocker()
        .getVolume(volume)
        .remove()
        .catch(() => undefined);
    }
  });

  test("destroy is idempotent and getInfo then says destroyed", async () => {
    const box = await create();
    await provider.doDestroy(box, call());
    await provider.doDestroy(box, call());
    expect((await provider.doGetInfo(box, call())).state).toBe("destroyed");
    await expect(sh(box, "true")).rejects.toMatchObject({ code: "NotFound" });
  });

  test("a create that fails after the container exists removes it", async () => {
    // 192.0.2.1 (TEST-NET-1) is no address of this host: binding the port fails at start.
    const broken = docker({
      image: TEST_IMAGE,
      labels: { [RUN_LABEL]: RUN_ID, role: "broken" },
      publishAddress: "192.0.2.1",
    });
    await expect(broken.doCreate({ ports: [8080] }, call())).rejects.toMatchObject({
      code: expect.any(String),
    });
    const left = (await leftovers()).filter((c) => c.Labels.role === "broken");
    expect(left).toEqual([]);
  });

  test("invalid specs are Validation errors before any engine call", async () => {
    for (const spec of [
      { ports: [0] },
      { ports: [8080], network: { egress: "block-all" as const } },
      { resources: { memoryMB: 1 } },
      { volumes: [{ name: "../x", mountPath: "/data" }] },
      { volumes: [{ name: "ok", mountPath: "relative" }] },
    ]) {
      await expect(provider.doCreate(spec, call())).rejects.toMatchObject({ code: "Validation" });
    }
  });

  test("an unreachable engine is a retryable Provider error, quickly", async () => {
    const nowhere = docker({ socketPath: "/nonexistent/docker.sock", requestTimeoutMs: 5_000 });
    const error = await nowhere.doConnect("sbox-000000000000", call()).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "Provider", retryable: true });
    const tcp = docker({ host: "tcp://127.0.0.1:1", requestTimeoutMs: 5_000 });
    expect(await tcp.doConnect("sbox-000000000000", call()).catch((e: unknown) => e)).toMatchObject({
      code: "Provider",
      retryable: true,
    });
  });
});
