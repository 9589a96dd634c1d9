/**
 * Manager + Docker: a stopped container comes back with its ports published on new host ports, so the
 * preview URLs a record kept from before the stop point at nothing. `resume` asks the provider again;
 * `getUrl` after a resume returns the URL that answers (the one a live `ports.expose` returns).
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createSandboxClient, type SandboxProvider } from "@sbox/core";
import { docker } from "@sbox/provider-docker";
import { afterAll, describe, expect, it } from "vitest";
import { memoryStore } from "../src/memory-store.js";
import { SandboxManager } from "../src/sandbox-manager.js";

const IMAGE = process.env.SBOX_DOCKER_TEST_IMAGE ?? "sbox-busybox:latest";
const engine = spawnSync("docker", ["image", "inspect", IMAGE], { stdio: "ignore", timeout: 15_000 });
const ready = engine.status === 0;
const why = `no Docker Engine with ${IMAGE} (scripts/start-dockerd.sh, scripts/build-busybox-image.sh)`;
if (!ready) {
  if (process.env.CI) throw new Error(`CI is set but ${why}`);
  console.warn(`[manager] SKIPPING the Docker URL test: ${why}`);
}

const labels = { "sbox.test-run": `manager-${process.pid}-${randomBytes(4).toString("hex")}` };
const provider = (): SandboxProvider => docker({ image: IMAGE, labels }) as unknown as SandboxProvider;

async function answer(url: string, deadlineMs: number): Promise<string> {
  const deadline = Date.now() + deadlineMs;
  let last = "no attempt";
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`${url}/hello.txt`, { signal: AbortSignal.timeout(2_000) });
      const body = await response.text();
      if (response.status === 200) return body;
      last = `status ${response.status}`;
    } catch (error) {
      last = String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return `no answer (${last})`;
}

describe.skipIf(!ready)(`SandboxManager preview URLs after stop and resume (docker, ${IMAGE})`, () => {
  const store = memoryStore();
  const manager = new SandboxManager({ providers: { docker: provider() }, store, startGraceMs: 300 });
  afterAll(async () => {
    const client = createSandboxClient({ provider: provider() });
    // A provider with `labels` only sees the containers carrying them: this run's.
    for await (const info of client.list()) await (await client.connect(info.id)).destroy().catch(() => {});
    await client.dispose();
    await manager.close();
    await store.close();
  });

  it("resume gives the record the URLs that answer now, and getUrl returns them", async () => {
    const port = 8080;
    const record = await manager.create({
      spec: {
        ports: [port],
        files: [{ path: "/tmp/site/hello.txt", content: "hello from the sandbox" }],
        start: ["busybox", "httpd", "-f", "-p", String(port), "-h", "/tmp/site"],
      },
    });
    const before = await manager.getUrl(record.id, port);
    expect(await answer(before, 15_000)).toBe("hello from the sandbox");

    await manager.stop(record.id);
    const resumed = await manager.resume(record.id);
    const client = createSandboxClient({ provider: provider() });
    const live = await (await client.connect(record.sandboxId!)).ports!.expose(port);
    await client.dispose();

    expect(resumed.runtime.urls?.[String(port)]).toBe(live.url);
    const after = await manager.getUrl(record.id, port);
    expect(after).toBe(live.url);
    expect(await answer(after, 15_000)).toBe("hello from the sandbox");
    await manager.destroy(record.id);
  });
});
