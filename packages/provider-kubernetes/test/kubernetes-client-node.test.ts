/**
 * `@kubernetes/client-node`'s own streaming clients — Exec, Attach, Log, Watch and PortForward, which the
 * provider does not use for exec — against the Kubernetes emulator: a second independent client that the
 * emulator must satisfy besides kubectl (and the provider's own WebSocket code).
 */
import { createServer } from "node:net";
import { PassThrough, Readable } from "node:stream";
import * as k8s from "@kubernetes/client-node";
import type { KubernetesEmulator } from "@sbox/emulators/kubernetes";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ENGINE, SKIP_NOTE, startTestEmulator, TEST_IMAGE } from "./kubernetes-test-env.js";

function collect(stream: PassThrough): () => string {
  let text = "";
  stream.on("data", (chunk: Buffer) => {
    text += chunk.toString("utf8");
  });
  return () => text;
}

describe.skipIf(!ENGINE.ok)(`@kubernetes/client-node against the emulator${SKIP_NOTE}`, () => {
  let emulator: KubernetesEmulator;
  let config: k8s.KubeConfig;
  let core: k8s.CoreV1Api;

  beforeAll(async () => {
    emulator = await startTestEmulator();
    config = new k8s.KubeConfig();
    config.loadFromString(emulator.kubeconfig);
    core = config.makeApiClient(k8s.CoreV1Api);
  });

  afterAll(async () => {
    await emulator?.close();
  });

  test("Watch sees a pod added (Pending) and then Running", async () => {
    const events: string[] = [];
    const watch = new k8s.Watch(config);
    const request = await watch.watch(
      "/api/v1/namespaces/default/pods",
      { labelSelector: "app=watched" },
      (type, pod: k8s.V1Pod) =>
        events.push(
          `${type}:${pod.status?.phase ?? ""}${pod.metadata?.deletionTimestamp ? ":deleting" : ""}`,
        ),
      () => {},
    );
    await core.createNamespacedPod({
      namespace: "default",
      body: {
        metadata: { name: "watched", labels: { app: "watched" } },
        spec: {
          containers: [
            {
              name: "main",
              image: TEST_IMAGE,
              command: ["sh", "-c", "echo line-one; echo line-two; exec sleep 300"],
              stdin: true,
            },
          ],
        },
      },
    });
    for (let i = 0; i < 100 && !events.some((e) => e.startsWith("MODIFIED:Running")); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(events[0]).toBe("ADDED:Pending");
    expect(events).toContain("MODIFIED:Running");
    request.abort();
  });

  test("Exec runs a command with stdin and reports its exit code in the status", async () => {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const out = collect(stdout);
    const err = collect(stderr);
    const status = await new Promise<k8s.V1Status>((resolve, reject) => {
      new k8s.Exec(config)
        .exec(
          "default",
          "watched",
          "main",
          ["sh", "-c", "cat; echo to-stderr >&2; exit 5"],
          stdout,
          stderr,
          Readable.from([Buffer.from("via client-node\n")]),
          false,
          resolve,
        )
        .catch(reject);
    });
    expect(status.status).toBe("Failure");
    expect(status.reason).toBe("NonZeroExitCode");
    expect(status.details?.causes?.[0]).toEqual({ reason: "ExitCode", message: "5" });
    expect(out()).toBe("via client-node\n");
    expect(err()).toBe("to-stderr\n");
  });

  test("Log reads the container's output, and readNamespacedPodLog with tailLines", async () => {
    const tail = await core.readNamespacedPodLog({ name: "watched", namespace: "default", tailLines: 1 });
    expect(tail).toBe("line-two\n");
    const stream = new PassThrough();
    const text = collect(stream);
    const request = await new k8s.Log(config).log("default", "watched", "main", stream, {
      follow: false,
      timestamps: true,
    });
    for (let i = 0; i < 50 && !text().includes("line-two"); i++) await new Promise((r) => setTimeout(r, 50));
    expect(text()).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z line-one\n\d{4}-\d\d-\d\dT[\d:.]+Z line-two\n$/);
    request.abort();
  });

  test("PortForward carries a TCP connection to a port in the pod", async () => {
    const server = await new Promise<{ close(): void; port: number }>((resolve) => {
      void new k8s.Exec(config).exec(
        "default",
        "watched",
        "main",
        ["sh", "-c", "mkdir -p /srv && echo forwarded > /srv/index.html && exec httpd -f -p 8081 -h /srv"],
        new PassThrough(),
        new PassThrough(),
        null,
        false,
      );
      const forward = new k8s.PortForward(config);
      const listener = createServer((socket) => {
        void forward.portForward("default", "watched", [8081], socket, null, socket);
      });
      listener.listen(0, "127.0.0.1", () => {
        const address = listener.address();
        resolve({
          close: () => listener.close(),
          port: typeof address === "object" && address ? address.port : 0,
        });
      });
    });
    try {
      let body = "";
      for (let i = 0; i < 30 && body !== "forwarded\n"; i++) {
        body = await fetch(`http://127.0.0.1:${server.port}/index.html`, { headers: { connection: "close" } })
          .then((r) => r.text())
          .catch(() => "");
        if (body !== "forwarded\n") await new Promise((r) => setTimeout(r, 100));
      }
      expect(body).toBe("forwarded\n");
    } finally {
      server.close();
    }
  });

  test("deleting the pod ends it; listing by label finds nothing afterwards", async () => {
    await core.deleteNamespacedPod({ name: "watched", namespace: "default" });
    for (let i = 0; i < 100; i++) {
      const list = await core.listNamespacedPod({ namespace: "default", labelSelector: "app=watched" });
      if (list.items.length === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(
      (await core.listNamespacedPod({ namespace: "default", labelSelector: "app=watched" })).items,
    ).toEqual([]);
    expect(emulator.machines).toBe(0);
  });
});
