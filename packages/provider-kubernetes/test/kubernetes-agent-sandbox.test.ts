/**
 * Mode `agent-sandbox` through the emulator's agent-sandbox controller: conformance cases on Sandboxes
 * (stop suspends, resume brings a pod back), and claims on a SandboxWarmPool — a claim adopts a warm,
 * running sandbox (launch type `warm`), the pool refills, a claim with env starts a fresh one from the
 * template (as its `envVarsInjectionPolicy` allows), and destroying a claim takes its sandbox and pod along.
 */
import * as k8s from "@kubernetes/client-node";
import { runConformance } from "@sbox/conformance/vitest";
import { createSandboxClient } from "@sbox/core";
import type { KubernetesEmulator } from "@sbox/emulators/kubernetes";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ENGINE, SKIP_NOTE, startTestEmulator, TEST_IMAGE, testProvider } from "./kubernetes-test-env.js";

const emulator: KubernetesEmulator | undefined = ENGINE.ok ? await startTestEmulator() : undefined;
const EXT = { group: "extensions.agents.x-k8s.io", version: "v1beta1", namespace: "default" };

/** A template with env injection allowed, and a pool of two warm sandboxes of it. */
async function createWarmPool(target: KubernetesEmulator): Promise<void> {
  const config = new k8s.KubeConfig();
  config.loadFromString(target.kubeconfig);
  const api = config.makeApiClient(k8s.CustomObjectsApi);
  await api.createNamespacedCustomObject({
    ...EXT,
    plural: "sandboxtemplates",
    body: {
      apiVersion: "extensions.agents.x-k8s.io/v1beta1",
      kind: "SandboxTemplate",
      metadata: { name: "busybox" },
      spec: {
        envVarsInjectionPolicy: "Allowed",
        podTemplate: {
          spec: {
            containers: [
              {
                name: "main",
                image: TEST_IMAGE,
                command: ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"],
              },
            ],
          },
        },
      },
    },
  });
  await api.createNamespacedCustomObject({
    ...EXT,
    plural: "sandboxwarmpools",
    body: {
      apiVersion: "extensions.agents.x-k8s.io/v1beta1",
      kind: "SandboxWarmPool",
      metadata: { name: "warm" },
      spec: { replicas: 2, sandboxTemplateRef: { name: "busybox" } },
    },
  });
}

if (emulator) {
  await createWarmPool(emulator);
  runConformance({
    provider: () => testProvider(emulator, { mode: "agent-sandbox" }),
    only: ["lifecycle", "exec.stdout", "exec.stdin.bytes", "files.write.binary-roundtrip", "manifest"],
    label: "kubernetes agent-sandbox (emulator)",
  });
  runConformance({
    provider: () => testProvider(emulator, { mode: "agent-sandbox", warmPool: "warm" }),
    only: ["lifecycle", "exec.stdout", "files.write.binary-roundtrip"],
    label: "kubernetes agent-sandbox claims (emulator)",
  });
}

describe.skipIf(!emulator)(`agent-sandbox warm pools and claims${SKIP_NOTE}`, () => {
  let custom: k8s.CustomObjectsApi;
  const poolSandboxes = async () =>
    (
      (await custom.listNamespacedCustomObject({
        group: "agents.x-k8s.io",
        version: "v1beta1",
        namespace: "default",
        plural: "sandboxes",
        labelSelector: "agents.x-k8s.io/warm-pool-sandbox",
      })) as {
        items: { metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } }[];
      }
    ).items;
  const readyPool = async (count: number) => {
    for (let i = 0; i < 200; i++) {
      const ready = (await poolSandboxes()).filter((s) =>
        s.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
      );
      if (ready.length === count) return ready;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`the warm pool never had ${count} ready sandboxes`);
  };

  beforeAll(() => {
    const config = new k8s.KubeConfig();
    config.loadFromString(emulator!.kubeconfig);
    custom = config.makeApiClient(k8s.CustomObjectsApi);
  });

  afterAll(async () => {
    await emulator?.close();
  });

  test("a claim adopts a warm sandbox, the pool refills, env forces a cold start, destroy takes the pod along", async () => {
    const before = await readyPool(2);
    const client = createSandboxClient({
      provider: testProvider(emulator!, { mode: "agent-sandbox", warmPool: "warm" }),
    });
    const warm = await client.create({ metadata: { purpose: "warm" } });
    const info = await warm.getInfo();
    expect(info.state).toBe("running");
    expect(info.metadata).toEqual({ purpose: "warm" });
    const claim = (await custom.getNamespacedCustomObject({
      ...EXT,
      plural: "sandboxclaims",
      name: warm.id.slice("kubernetes:".length),
    })) as { status: { sandbox: { name: string } } };
    expect(before.map((s) => s.metadata.name)).toContain(claim.status.sandbox.name);
    expect((await warm.commands.run("echo adopted")).stdout).toBe("adopted\n");
    const refilled = await readyPool(2);
    expect(refilled.map((s) => s.metadata.name)).not.toContain(claim.status.sandbox.name);
    const cold = await client.create({ env: { GREETING: "from-claim" } });
    expect((await cold.commands.run("echo $GREETING")).stdout).toBe("from-claim\n");
    const coldClaim = (await custom.getNamespacedCustomObject({
      ...EXT,
      plural: "sandboxclaims",
      name: cold.id.slice("kubernetes:".length),
    })) as { status: { sandbox: { name: string } } };
    expect(coldClaim.status.sandbox.name).toBe(cold.id.slice("kubernetes:".length));
    await warm.destroy();
    await cold.destroy();
    expect(
      emulator!
        .podNames()
        .filter(
          (name) => name.includes(claim.status.sandbox.name) || name.includes(coldClaim.status.sandbox.name),
        ),
    ).toEqual([]);
    await client.dispose();
  });

  test("deleting the pool removes its unclaimed sandboxes and their pods", async () => {
    await custom.deleteNamespacedCustomObject({ ...EXT, plural: "sandboxwarmpools", name: "warm" });
    for (let i = 0; i < 100 && emulator!.podNames().length > 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await poolSandboxes()).toEqual([]);
    expect(emulator!.podNames()).toEqual([]);
  });
});
