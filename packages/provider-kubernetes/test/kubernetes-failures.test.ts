/**
 * What happens when things go wrong, through the emulator: a pod deleted from outside while a command runs
 * (the command rejects with a SandboxError well within its timeout), an image that cannot be pulled (a
 * clear NotFound naming the image, quickly, and no pod left), an egress allow-list the cluster refuses
 * (Validation, previous policy kept), hostile input (a user, a NUL in argv, a host name in an allow-list),
 * bad options, and a dead API server (a retryable Provider error, not a hang).
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import * as k8s from "@kubernetes/client-node";
import { createSandboxClient, SandboxError } from "@sbox/core";
import type { KubernetesEmulator } from "@sbox/emulators/kubernetes";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { kubernetes } from "../src/index.js";
import { ENGINE, SKIP_NOTE, startTestEmulator, testProvider } from "./kubernetes-test-env.js";

describe("kubernetes options", () => {
  test("unknown options and malformed values are refused when the provider is made", () => {
    expect(() => kubernetes({ nope: true } as never)).toThrow(/unknown option "nope"/);
    expect(() => kubernetes({ mode: "vm" as never })).toThrow(/mode must be/);
    expect(() => kubernetes({ warmPool: "pool" })).toThrow(/warmPool needs mode/);
    expect(() => kubernetes({ labels: { "bad key!": "x" } })).toThrow(/not a valid Kubernetes label/);
    expect(() => kubernetes({ activeDeadlineSeconds: -1 })).toThrow(/activeDeadlineSeconds/);
  });

  test("settings come from SBOX_KUBERNETES_* when the option is absent, and a bad value names the variable", () => {
    const saved = process.env.SBOX_KUBERNETES_NAMESPACE;
    try {
      process.env.SBOX_KUBERNETES_NAMESPACE = "Not_A_Namespace";
      expect(() => kubernetes({})).toThrow(
        /environment variable SBOX_KUBERNETES_NAMESPACE must be a namespace name/,
      );
      // The explicit option wins over the variable.
      expect(() => kubernetes({ namespace: "sandboxes" })).not.toThrow();
    } finally {
      if (saved === undefined) delete process.env.SBOX_KUBERNETES_NAMESPACE;
      else process.env.SBOX_KUBERNETES_NAMESPACE = saved;
    }
    const error = (() => {
      try {
        kubernetes({ kubeconfig: "" });
      } catch (e) {
        return e;
      }
    })();
    expect((error as SandboxError).code).toBe("Validation");
  });

  test("a kubeconfig without a cluster is a Validation error at the first call, without a credential in it", async () => {
    const client = createSandboxClient({
      provider: kubernetes({ kubeconfig: "apiVersion: v1\nkind: Config\nclusters: []\n" }),
    });
    const error = await client.create().catch((e: unknown) => e);
    expect(SandboxError.isInstance(error)).toBe(true);
    expect((error as SandboxError).code).toBe("Validation");
  });

  test("an API server that does not answer is a retryable error, not a hang", async () => {
    const kubeconfig = [
      "apiVersion: v1",
      "kind: Config",
      "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}}]",
      "users: [{name: u, user: {token: secret-token-value-123}}]",
      "contexts: [{name: x, context: {cluster: c, user: u}}]",
      "current-context: x",
    ].join("\n");
    const client = createSandboxClient({
      provider: kubernetes({ kubeconfig, requestTimeoutMs: 5_000 }),
      retry: { retries: 0 },
    });
    const started = Date.now();
    const error = await client.connect("kubernetes:sbox-000000000000").catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(SandboxError.isInstance(error)).toBe(true);
    expect((error as SandboxError).code).toBe("Provider");
    expect((error as SandboxError).retryable).toBe(true);
    expect(String((error as Error).message)).not.toContain("secret-token-value-123");
  });
});

describe.skipIf(!ENGINE.ok)(`kubernetes failures through the emulator${SKIP_NOTE}`, () => {
  let emulator: KubernetesEmulator;
  let core: k8s.CoreV1Api;

  beforeAll(async () => {
    emulator = await startTestEmulator();
    const config = new k8s.KubeConfig();
    config.loadFromString(emulator.kubeconfig);
    core = config.makeApiClient(k8s.CoreV1Api);
  });

  afterAll(async () => {
    await emulator?.close();
  });

  test("a pod deleted from outside mid-command rejects the command with a SandboxError within its timeout", async () => {
    const client = createSandboxClient({ provider: testProvider(emulator) });
    const sandbox = await client.create();
    const name = sandbox.id.slice("kubernetes:".length);
    const started = Date.now();
    const running = Promise.resolve(sandbox.commands.run("sleep 60", { timeoutMs: 30_000 })).catch(
      (e: unknown) => e,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    await core.deleteNamespacedPod({ name, namespace: "default" });
    const error = await running;
    expect(SandboxError.isInstance(error)).toBe(true);
    expect((error as SandboxError).code).toBe("NotFound");
    expect((error as Error).message).toContain("went away");
    expect(Date.now() - started).toBeLessThan(30_000);
    await sandbox.destroy();
    await client.dispose();
  });

  test("an API server that goes silent mid-command (connection frozen, not closed) rejects the command with Timeout within the request deadline", async () => {
    // A TCP relay between the provider and the emulator that can stop forwarding without closing.
    let frozen = false;
    const pairs: Socket[] = [];
    const target = new URL(emulator.url);
    const relay: Server = createServer((inbound) => {
      const outbound = connect(Number(target.port), target.hostname);
      pairs.push(inbound, outbound);
      inbound.on("data", (chunk) => {
        if (!frozen) outbound.write(chunk);
      });
      outbound.on("data", (chunk) => {
        if (!frozen) inbound.write(chunk);
      });
      inbound.on("error", () => outbound.destroy());
      outbound.on("error", () => inbound.destroy());
      inbound.on("close", () => outbound.destroy());
      outbound.on("close", () => inbound.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
    const port = (relay.address() as { port: number }).port;
    const kubeconfig = emulator.kubeconfig.replace(emulator.url, `https://127.0.0.1:${port}`);
    const client = createSandboxClient({
      provider: testProvider(emulator, { kubeconfig, requestTimeoutMs: 2_000 }),
      retry: { retries: 0 },
    });
    const sandbox = await client.create();
    try {
      const running = Promise.resolve(sandbox.commands.run("sleep 60", { timeoutMs: 60_000 })).catch(
        (e: unknown) => e,
      );
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      frozen = true;
      const started = Date.now();
      const error = await running;
      const ms = Date.now() - started;
      expect(SandboxError.isInstance(error), String(error)).toBe(true);
      expect((error as SandboxError).code).toBe("Timeout");
      expect((error as Error).message).toMatch(/sent nothing/);
      expect(ms).toBeLessThan(2 * 2_000 + 2_000);
    } finally {
      frozen = false;
      for (const socket of pairs) socket.destroy();
      await sandbox.destroy();
      await client.dispose();
      await new Promise((resolve) => relay.close(resolve));
    }
  });

  test("an image that cannot be pulled fails create quickly with NotFound naming the image, and leaves no pod", async () => {
    const client = createSandboxClient({ provider: testProvider(emulator), retry: { retries: 0 } });
    const started = Date.now();
    const error = await client.create({ template: "sbox-no-such-image:0.0.1" }).catch((e: unknown) => e);
    expect(SandboxError.isInstance(error)).toBe(true);
    expect((error as SandboxError).code).toBe("NotFound");
    expect((error as Error).message).toContain("sbox-no-such-image:0.0.1");
    expect((error as Error).message).toMatch(/ErrImagePull|ImagePullBackOff/);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(emulator.podNames()).toEqual([]);
    await client.dispose();
  });

  test("a refused allow-list keeps the policy in force, host names are refused, hostile exec input is refused", async () => {
    const client = createSandboxClient({ provider: testProvider(emulator) });
    const sandbox = await client.create();
    await sandbox.network!.setEgress("block-all");
    const refused = await sandbox.network!.setEgress({ allow: ["10.0.0.0/8"] }).catch((e: unknown) => e);
    expect((refused as SandboxError).code).toBe("Validation");
    const policy = await sandbox.network!.setEgress({ allow: ["example.com"] }).catch((e: unknown) => e);
    expect((policy as SandboxError).code).toBe("Validation");
    const config = new k8s.KubeConfig();
    config.loadFromString(emulator.kubeconfig);
    const networking = config.makeApiClient(k8s.NetworkingV1Api);
    const kept = await networking.readNamespacedNetworkPolicy({
      name: `${sandbox.id.slice("kubernetes:".length)}-egress`,
      namespace: "default",
    });
    expect(kept.spec?.policyTypes).toEqual(["Egress"]);
    expect(kept.spec?.egress ?? []).toEqual([]);
    const nul = await Promise.resolve(sandbox.commands.run(["echo", "a\0b"])).catch((e: unknown) => e);
    expect((nul as SandboxError).code).toBe("Validation");
    await sandbox.destroy();
    const gone = await networking
      .readNamespacedNetworkPolicy({
        name: `${sandbox.id.slice("kubernetes:".length)}-egress`,
        namespace: "default",
      })
      .catch((e: unknown) => e);
    expect((gone as { code?: number }).code).toBe(404);
    await client.dispose();
  });

  test("a LoadBalancer service on a cluster without a load-balancer controller is a Timeout naming it, and goes with the sandbox", async () => {
    // The sandbox is made with the usual create timeout (a busy machine may take longer than the short
    // wait below to start a container); a second client with a short one waits for the load balancer.
    const maker = createSandboxClient({ provider: testProvider(emulator) });
    const made = await maker.create();
    const client = createSandboxClient({
      provider: testProvider(emulator, { ports: { service: "LoadBalancer" }, createTimeoutMs: 1_500 }),
    });
    const sandbox = await client.connect(made.id);
    const error = await sandbox.ports!.expose(8080).catch((e: unknown) => e);
    expect((error as SandboxError).code).toBe("Timeout");
    expect((error as Error).message).toContain("load-balancer controller");
    const services = await core.listNamespacedService({
      namespace: "default",
      labelSelector: `sbox.dev/sandbox=${sandbox.id.slice("kubernetes:".length)}`,
    });
    expect(services.items.map((s) => s.spec?.type)).toEqual(["LoadBalancer"]);
    await sandbox.destroy();
    const after = await core.listNamespacedService({
      namespace: "default",
      labelSelector: `sbox.dev/sandbox=${sandbox.id.slice("kubernetes:".length)}`,
    });
    expect(after.items).toEqual([]);
    await client.dispose();
    await maker.dispose();
  });

  test("exec output is byte-exact and the exit code comes from the status channel, even when the command prints a look-alike", async () => {
    const client = createSandboxClient({ provider: testProvider(emulator) });
    const sandbox = await client.create();
    const bytes = new Uint8Array(256).map((_, i) => i);
    await sandbox.files.write("/tmp/all.bin", bytes);
    expect(Buffer.from(await sandbox.files.read("/tmp/all.bin")).equals(Buffer.from(bytes))).toBe(true);
    const spoof = await sandbox.commands.run(`printf '{"status":"Success"}\\n__SBOX_EXIT_0__\\n'; exit 42`);
    expect(spoof.exitCode).toBe(42);
    await sandbox.destroy();
    await client.dispose();
  });
});
