/**
 * Fidelity of the Kubernetes emulator's JSON against a description nobody here wrote: the models that
 * `@kubernetes/client-node` 1.4.0 generates from Kubernetes' OpenAPI (spec v1.34.0). For every route the
 * emulator serves that has a model — discovery, pods, services, network policies, namespaces, nodes,
 * events, config maps, secrets, service accounts, errors (`Status`), watch events — the answer is checked
 * field by field against the model's attribute types (`getAttributeTypeMap()`: every key a known field,
 * every value of its type: strings, integers for int32/int64, RFC 3339 for date-time, maps, arrays,
 * nested models) and its required fields (the non-optional properties of the model's `.d.ts`, OpenAPI's
 * `required`). A mismatch lists every path that differs. The agent-sandbox CRDs have no model there;
 * they are not checked here.
 */

import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { request } from "node:https";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type KubernetesEmulator, startKubernetesEmulator } from "../src/kubernetes/index.js";

const IMAGE = "sbox-busybox:latest";

interface Attribute {
  readonly name: string;
  readonly baseName: string;
  readonly type: string;
  readonly format: string;
}
type Model = { getAttributeTypeMap(): Attribute[] };

const MODELS_DIR = join(
  dirname(createRequire(import.meta.url).resolve("@kubernetes/client-node")),
  "gen",
  "models",
);
const requiredCache = new Map<string, ReadonlySet<string>>();

/** The required properties of a model: those its generated `.d.ts` declares without `?`. */
function requiredOf(model: string): ReadonlySet<string> {
  let required = requiredCache.get(model);
  if (!required) {
    const text = readFileSync(join(MODELS_DIR, `${model}.d.ts`), "utf8");
    const body = text.slice(text.indexOf(`export declare class ${model} `));
    required = new Set(
      [...body.matchAll(/^ {4}'([^']+)'(\?)?: /gm)].filter((m) => m[2] === undefined).map((m) => m[1]!),
    );
    requiredCache.set(model, required);
  }
  return required;
}

function modelClass(name: string): Model | undefined {
  const found = (k8s as unknown as Record<string, unknown>)[name];
  return typeof found === "function" && "getAttributeTypeMap" in found ? (found as Model) : undefined;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Every way `value` differs from type `type` (with `format`), as `path: problem` lines. */
function mismatches(value: unknown, type: string, path: string, format = ""): string[] {
  // A zero metav1.Time is `null` in Kubernetes' own JSON (`lastProbeTime: null`); any other null is not
  // what the API server sends (it omits empty fields).
  if (value === null) return type === "Date" ? [] : [`${path}: null (the API server omits empty fields)`];
  if (type === "any") return [];
  if (type === "string")
    return typeof value === "string" ? [] : [`${path}: expected a string, got ${JSON.stringify(value)}`];
  if (type === "boolean")
    return typeof value === "boolean" ? [] : [`${path}: expected a boolean, got ${JSON.stringify(value)}`];
  if (type === "number") {
    if (typeof value !== "number") return [`${path}: expected a number, got ${JSON.stringify(value)}`];
    return /^int/.test(format) && !Number.isInteger(value)
      ? [`${path}: expected an ${format}, got ${value}`]
      : [];
  }
  if (type === "Date") {
    return typeof value === "string" && RFC3339.test(value)
      ? []
      : [`${path}: expected an RFC 3339 time, got ${JSON.stringify(value)}`];
  }
  if (type === "IntOrString") {
    return typeof value === "string" || Number.isInteger(value)
      ? []
      : [`${path}: expected an int or a string, got ${JSON.stringify(value)}`];
  }
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (!Array.isArray(value)) return [`${path}: expected an array, got ${JSON.stringify(value)}`];
    return value.flatMap((item, i) => mismatches(item, array[1]!, `${path}[${i}]`, format));
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (typeof value !== "object" || Array.isArray(value)) return [`${path}: expected an object (a map)`];
    return Object.entries(value as object).flatMap(([key, item]) =>
      mismatches(item, map[1]!, `${path}[${JSON.stringify(key)}]`, format),
    );
  }
  const model = modelClass(type);
  if (!model) return [`${path}: the model ${type} is unknown to client-node (the check cannot judge it)`];
  if (typeof value !== "object" || Array.isArray(value))
    return [`${path}: expected an object (${type}), got ${JSON.stringify(value)}`];
  const attributes = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a]));
  const problems: string[] = [];
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    const attribute = attributes.get(key);
    if (!attribute) problems.push(`${path}.${key}: not a field of ${type}`);
    else problems.push(...mismatches(item, attribute.type, `${path}.${key}`, attribute.format));
  }
  for (const required of requiredOf(type)) {
    const attribute = [...attributes.values()].find((a) => a.name === required);
    if (attribute && !(attribute.baseName in (value as object)))
      problems.push(`${path}.${attribute.baseName}: required by ${type}, missing`);
  }
  return problems;
}

/** Why the suite cannot run here (pods are containers of the Docker Engine), if it cannot. */
function missing(): string | undefined {
  const docker = spawnSync("docker", ["image", "inspect", IMAGE], { stdio: "ignore", timeout: 20_000 });
  return docker.error || docker.status !== 0
    ? `no Docker Engine with ${IMAGE} (scripts/start-dockerd.sh, scripts/build-busybox-image.sh)`
    : undefined;
}
const why = missing();
if (why && process.env.CI) throw new Error(`CI is set but ${why}`);

describe.skipIf(why !== undefined)(
  `Kubernetes emulator answers against client-node's OpenAPI models${why ? ` (SKIPPED: ${why})` : ""}`,
  () => {
    let emulator: KubernetesEmulator;

    /** One JSON request with the emulator's CA and token. */
    const call = (
      method: string,
      path: string,
      body?: unknown,
      token: string = emulator.token,
    ): Promise<{ status: number; json: unknown; text: string }> =>
      new Promise((resolve, reject) => {
        const url = new URL(path, emulator.url);
        const req = request(
          url,
          {
            method,
            ca: emulator.caPem,
            headers: {
              Authorization: `Bearer ${token}`,
              Accept: "application/json",
              ...(body === undefined ? {} : { "Content-Type": "application/json" }),
            },
            timeout: 30_000,
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (chunk: Buffer) => chunks.push(chunk));
            res.on("end", () => {
              const text = Buffer.concat(chunks).toString("utf8");
              let json: unknown;
              try {
                json = JSON.parse(text);
              } catch {
                json = undefined;
              }
              resolve({ status: res.statusCode ?? 0, json, text });
            });
          },
        );
        req.on("timeout", () => req.destroy(new Error(`${method} ${path}: no answer in 30 s`)));
        req.on("error", reject);
        req.end(body === undefined ? undefined : JSON.stringify(body));
      });

    /** Calls a route and checks its JSON against `model`; returns the JSON. */
    const expectModel = async (
      model: string,
      method: string,
      path: string,
      body?: unknown,
      status?: number,
    ) => {
      const answer = await call(method, path, body);
      if (status !== undefined) expect(answer.status, answer.text).toBe(status);
      else expect(answer.status, answer.text).toBeLessThan(300);
      expect(answer.json, `${method} ${path} answered no JSON: ${answer.text.slice(0, 200)}`).toBeDefined();
      expect(mismatches(answer.json, model, `${method} ${path}`)).toEqual([]);
      return answer.json as Record<string, unknown>;
    };

    beforeAll(async () => {
      emulator = await startKubernetesEmulator({ backend: "docker" });
    });

    afterAll(async () => {
      await emulator?.close();
    });

    test("the check itself catches a wrong type, an unknown field and a missing required field", () => {
      expect(
        mismatches(
          { apiVersion: "v1", kind: "Pod", metadata: { name: 3, bogus: true }, spec: {} },
          "V1Pod",
          "pod",
        ),
      ).toEqual([
        "pod.metadata.name: expected a string, got 3",
        "pod.metadata.bogus: not a field of V1ObjectMeta",
        "pod.spec.containers: required by V1PodSpec, missing",
      ]);
    });

    test("discovery: /version, /api, /apis, a group, resource lists", async () => {
      await expectModel("VersionInfo", "GET", "/version");
      await expectModel("V1APIVersions", "GET", "/api");
      await expectModel("V1APIGroupList", "GET", "/apis");
      await expectModel("V1APIGroup", "GET", "/apis/networking.k8s.io");
      await expectModel("V1APIGroup", "GET", "/apis/agents.x-k8s.io");
      await expectModel("V1APIResourceList", "GET", "/api/v1");
      await expectModel("V1APIResourceList", "GET", "/apis/networking.k8s.io/v1");
      await expectModel("V1APIResourceList", "GET", "/apis/agents.x-k8s.io/v1beta1");
    });

    test("cluster objects: namespaces, nodes, service accounts", async () => {
      await expectModel("V1NamespaceList", "GET", "/api/v1/namespaces");
      await expectModel("V1Namespace", "GET", "/api/v1/namespaces/default");
      await expectModel("V1NodeList", "GET", "/api/v1/nodes");
      await expectModel("V1ServiceAccountList", "GET", "/api/v1/namespaces/default/serviceaccounts");
    });

    test("errors are Status objects: not found, invalid, unauthorized", async () => {
      await expectModel(
        "V1Status",
        "GET",
        "/api/v1/namespaces/default/pods/sbox-no-such-pod",
        undefined,
        404,
      );
      await expectModel(
        "V1Status",
        "POST",
        "/api/v1/namespaces/default/pods",
        { apiVersion: "v1", kind: "Pod", metadata: { name: "Not A Name" }, spec: { containers: [] } },
        422,
      );
      const unauthorized = await call("GET", "/api/v1/namespaces/default/pods", undefined, "not-the-token");
      expect(unauthorized.status).toBe(401);
      expect(mismatches(unauthorized.json, "V1Status", "GET pods (wrong token)")).toEqual([]);
    });

    test("config maps and secrets: create, get, list, delete", async () => {
      const base = "/api/v1/namespaces/default";
      await expectModel("V1ConfigMap", "POST", `${base}/configmaps`, {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "fidelity-cm", labels: { app: "fidelity" } },
        data: { key: "value" },
      });
      await expectModel("V1ConfigMap", "GET", `${base}/configmaps/fidelity-cm`);
      await expectModel("V1ConfigMapList", "GET", `${base}/configmaps?labelSelector=app%3Dfidelity`);
      await expectModel("V1Secret", "POST", `${base}/secrets`, {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "fidelity-secret" },
        data: { key: Buffer.from("value").toString("base64") },
      });
      await expectModel("V1SecretList", "GET", `${base}/secrets`);
      const deleted = await call("DELETE", `${base}/configmaps/fidelity-cm`);
      expect(deleted.status).toBe(200);
      // A delete answers the deleted object, or a Status (both are what real API servers send).
      const kind = (deleted.json as { kind?: string }).kind;
      expect(
        mismatches(deleted.json, kind === "Status" ? "V1Status" : "V1ConfigMap", "DELETE configmap"),
      ).toEqual([]);
      await call("DELETE", `${base}/secrets/fidelity-secret`);
    });

    test("network policies and services: create, get, list", async () => {
      const base = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies";
      await expectModel("V1NetworkPolicy", "POST", base, {
        apiVersion: "networking.k8s.io/v1",
        kind: "NetworkPolicy",
        metadata: { name: "fidelity-egress" },
        spec: { podSelector: { matchLabels: { app: "fidelity" } }, policyTypes: ["Egress"], egress: [] },
      });
      await expectModel("V1NetworkPolicy", "GET", `${base}/fidelity-egress`);
      await expectModel("V1NetworkPolicyList", "GET", base);
      await call("DELETE", `${base}/fidelity-egress`);
      const services = "/api/v1/namespaces/default/services";
      await expectModel("V1Service", "POST", services, {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "fidelity-svc" },
        spec: { type: "NodePort", selector: { app: "fidelity" }, ports: [{ port: 80, targetPort: 8080 }] },
      });
      await expectModel("V1Service", "GET", `${services}/fidelity-svc`);
      await expectModel("V1ServiceList", "GET", services);
      await call("DELETE", `${services}/fidelity-svc`);
    });

    test("pods: create, get while running, list by label, events, watch, delete", async () => {
      const base = "/api/v1/namespaces/default/pods";
      await expectModel("V1Pod", "POST", base, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "fidelity-pod", labels: { app: "fidelity" } },
        spec: {
          containers: [
            {
              name: "main",
              image: IMAGE,
              command: ["sleep", "300"],
              env: [{ name: "A", value: "1" }],
              resources: { limits: { cpu: "500m", memory: "64Mi" } },
            },
          ],
          restartPolicy: "Never",
        },
      });
      let pod: Record<string, unknown> = {};
      for (let i = 0; i < 120; i++) {
        pod = await expectModel("V1Pod", "GET", `${base}/fidelity-pod`);
        if ((pod.status as { phase?: string } | undefined)?.phase === "Running") break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect((pod.status as { phase?: string }).phase).toBe("Running");
      await expectModel("V1PodList", "GET", `${base}?labelSelector=app%3Dfidelity`);
      await expectModel("CoreV1EventList", "GET", "/api/v1/namespaces/default/events");
      // One watch event: the stream is newline-delimited WatchEvents.
      const watch = await new Promise<string>((resolve, reject) => {
        const req = request(
          new URL(`${base}?watch=1&labelSelector=app%3Dfidelity`, emulator.url),
          { ca: emulator.caPem, headers: { Authorization: `Bearer ${emulator.token}` } },
          (res) => {
            let text = "";
            res.on("data", (chunk: Buffer) => {
              text += chunk.toString("utf8");
              if (text.includes("\n")) {
                req.destroy();
                resolve(text.slice(0, text.indexOf("\n")));
              }
            });
          },
        );
        req.on("error", (error) => (error.message.includes("socket hang up") ? undefined : reject(error)));
        req.end();
      });
      const event = JSON.parse(watch) as { type: string; object: unknown };
      expect(mismatches(event, "V1WatchEvent", "watch event")).toEqual([]);
      expect(mismatches(event.object, "V1Pod", "watch event object")).toEqual([]);
      const deleted = await call("DELETE", `${base}/fidelity-pod?gracePeriodSeconds=0`);
      expect(deleted.status).toBeLessThan(300);
      const kind = (deleted.json as { kind?: string }).kind;
      expect(mismatches(deleted.json, kind === "Status" ? "V1Status" : "V1Pod", "DELETE pod")).toEqual([]);
    });
  },
);
