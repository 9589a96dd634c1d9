#!/usr/bin/env node
// Checks the Kubernetes emulator's agent-sandbox objects against kubernetes-sigs/agent-sandbox's own CRDs.
//
//   pnpm build            (the emulators dist is used)
//   pnpm --filter @sbox/emulators fidelity:kubernetes -- --agent-sandbox /path/to/agent-sandbox
//
// The checkout is brought by the developer with the `fetch` tool (`fetch github:kubernetes-sigs/agent-sandbox`;
// a work tree or a bare mirror works) and nothing of it is committed here. The CRDs in `k8s/crds/` hold the
// OpenAPI v3 schema the real API server validates and prunes with. This harness starts the emulator (docker
// backend), creates a SandboxTemplate, a SandboxWarmPool on it, a Sandbox and a SandboxClaim the way
// provider-kubernetes does, lets the emulator's controller reconcile them (pods start, the pool fills, the
// claim adopts a sandbox), then reads every object back (get and list) and validates it against the schema
// of the version the emulator serves: types, required fields, enums, formats (date-time), int-or-string,
// and fields the schema does not know (which a real API server would prune, so a client never sees them).
// The objects sent are validated first, so a harness error is not reported as an emulator one.
// Exit status: 0 when nothing differs, 1 otherwise. The core group's objects are checked against
// client-node's models by test/kubernetes-openapi-fidelity.test.ts instead.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { request } from "node:https";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";

const here = import.meta.dirname;
const IMAGE = "sbox-busybox:latest";
const CRDS = {
  SandboxTemplate: "k8s/crds/extensions.agents.x-k8s.io_sandboxtemplates.yaml",
  SandboxWarmPool: "k8s/crds/extensions.agents.x-k8s.io_sandboxwarmpools.yaml",
  Sandbox: "k8s/crds/agents.x-k8s.io_sandboxes.yaml",
  SandboxClaim: "k8s/crds/extensions.agents.x-k8s.io_sandboxclaims.yaml",
};

function usage(message) {
  if (message) console.error(`kubernetes-fidelity: ${message}`);
  console.error("usage: kubernetes-fidelity.mjs --agent-sandbox <kubernetes-sigs/agent-sandbox checkout>");
  process.exit(2);
}

const args = process.argv.slice(2).filter((a) => a !== "--");
const at = args.indexOf("--agent-sandbox");
if (at < 0 || !args[at + 1]) usage("--agent-sandbox is required");
const checkout = resolve(args[at + 1]);
if (!existsSync(checkout)) usage(`${checkout} does not exist`);

/** A file of the checkout: from the work tree, else from HEAD of a bare mirror. */
function checkoutFile(path) {
  const onDisk = join(checkout, path);
  if (existsSync(onDisk)) return readFileSync(onDisk, "utf8");
  const shown = spawnSync("git", ["-C", checkout, "show", `HEAD:${path}`], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (shown.status !== 0) usage(`${path} is not in ${checkout}: ${shown.stderr.trim()}`);
  return shown.stdout;
}

// js-yaml comes with @kubernetes/client-node (a devDependency here): no parser of our own.
const clientNode = createRequire(import.meta.url).resolve("@kubernetes/client-node");
const yaml = createRequire(clientNode)("js-yaml");

const { startKubernetesEmulator } = await import(join(here, "..", "dist", "kubernetes", "index.js"));

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Every way `value` differs from the OpenAPI v3 schema `schema`, as `path: problem` lines. */
function mismatches(value, schema, path) {
  if (!schema) return [];
  if (schema["x-kubernetes-int-or-string"]) {
    return typeof value === "string" || Number.isInteger(value)
      ? []
      : [`${path}: expected an int or a string`];
  }
  if (value === null) return schema.nullable ? [] : [`${path}: null (not nullable)`];
  const problems = [];
  if (schema.enum && !schema.enum.includes(value))
    problems.push(`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  switch (schema.type) {
    case "string":
      if (typeof value !== "string") return [`${path}: expected a string, got ${JSON.stringify(value)}`];
      if (schema.format === "date-time" && !RFC3339.test(value))
        problems.push(`${path}: expected an RFC 3339 time, got ${JSON.stringify(value)}`);
      return problems;
    case "integer":
      return Number.isInteger(value)
        ? problems
        : [`${path}: expected an integer, got ${JSON.stringify(value)}`];
    case "number":
      return typeof value === "number"
        ? problems
        : [`${path}: expected a number, got ${JSON.stringify(value)}`];
    case "boolean":
      return typeof value === "boolean"
        ? problems
        : [`${path}: expected a boolean, got ${JSON.stringify(value)}`];
    case "array":
      if (!Array.isArray(value)) return [`${path}: expected an array, got ${JSON.stringify(value)}`];
      return value.flatMap((item, i) => mismatches(item, schema.items, `${path}[${i}]`));
    default:
      break;
  }
  if (schema.type === "object" || schema.properties || schema.additionalProperties) {
    if (typeof value !== "object" || Array.isArray(value))
      return [`${path}: expected an object, got ${JSON.stringify(value)}`];
    for (const required of schema.required ?? []) {
      if (!(required in value)) problems.push(`${path}.${required}: required, missing`);
    }
    const open = schema["x-kubernetes-preserve-unknown-fields"] === true;
    for (const [key, item] of Object.entries(value)) {
      if (schema.properties && key in schema.properties) {
        problems.push(...mismatches(item, schema.properties[key], `${path}.${key}`));
      } else if (schema.additionalProperties && typeof schema.additionalProperties === "object") {
        problems.push(...mismatches(item, schema.additionalProperties, `${path}.${key}`));
      } else if (!open && !schema.additionalProperties && schema.properties) {
        problems.push(`${path}.${key}: not in the schema (a real API server prunes it)`);
      }
    }
  }
  return problems;
}

/** The schema of `kind` at the version the emulator serves, from the checkout's CRD. */
function schemaOf(kind, version) {
  const crd = yaml.load(checkoutFile(CRDS[kind]));
  const served = crd.spec.versions.find((v) => v.name === version);
  if (!served)
    throw new Error(
      `the ${kind} CRD has no version ${version} (it has ${crd.spec.versions.map((v) => v.name)})`,
    );
  const schema = structuredClone(served.schema.openAPIV3Schema);
  // metadata is ObjectMeta, which CRD schemas leave open; it is checked against client-node's model elsewhere.
  if (schema.properties?.metadata)
    schema.properties.metadata = { type: "object", "x-kubernetes-preserve-unknown-fields": true };
  return schema;
}

const emulator = await startKubernetesEmulator({ backend: "docker" });
const call = (method, path, body) =>
  new Promise((resolvePromise, reject) => {
    const req = request(
      new URL(path, emulator.url),
      {
        method,
        ca: emulator.caPem,
        headers: {
          Authorization: `Bearer ${emulator.token}`,
          Accept: "application/json",
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        timeout: 30_000,
      },
      (res) => {
        const chunks = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          try {
            resolvePromise({ status: res.statusCode, json: JSON.parse(text) });
          } catch {
            resolvePromise({ status: res.statusCode, json: undefined, text });
          }
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${method} ${path}: no answer in 30 s`)));
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });

const problems = [];
const podTemplate = {
  spec: {
    containers: [{ name: "sandbox", image: IMAGE, command: ["sleep", "3600"] }],
    restartPolicy: "Never",
  },
};
const objects = [
  [
    "SandboxTemplate",
    "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxtemplates",
    {
      apiVersion: "extensions.agents.x-k8s.io/v1beta1",
      kind: "SandboxTemplate",
      metadata: { name: "fidelity-template" },
      spec: { podTemplate },
    },
  ],
  [
    "SandboxWarmPool",
    "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxwarmpools",
    {
      apiVersion: "extensions.agents.x-k8s.io/v1beta1",
      kind: "SandboxWarmPool",
      metadata: { name: "fidelity-pool" },
      spec: { replicas: 1, sandboxTemplateRef: { name: "fidelity-template" } },
    },
  ],
  [
    "Sandbox",
    "/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes",
    {
      apiVersion: "agents.x-k8s.io/v1beta1",
      kind: "Sandbox",
      metadata: { name: "fidelity-sandbox", labels: { app: "fidelity" } },
      spec: {
        podTemplate: { metadata: { labels: { app: "fidelity" } }, spec: podTemplate.spec },
        operatingMode: "Running",
        shutdownTime: new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, "Z"),
        shutdownPolicy: "Delete",
      },
    },
  ],
  [
    "SandboxClaim",
    "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxclaims",
    {
      apiVersion: "extensions.agents.x-k8s.io/v1beta1",
      kind: "SandboxClaim",
      metadata: { name: "fidelity-claim" },
      spec: { warmPoolRef: { name: "fidelity-pool" } },
    },
  ],
];

let checked = 0;
try {
  const schemas = Object.fromEntries(Object.keys(CRDS).map((kind) => [kind, schemaOf(kind, "v1beta1")]));
  for (const [kind, base, body] of objects) {
    const sent = mismatches(body, schemas[kind], `sent ${kind}`);
    if (sent.length > 0) {
      console.error(
        `kubernetes-fidelity: the harness's own ${kind} does not fit the CRD (update the harness):\n  ${sent.join("\n  ")}`,
      );
      process.exitCode = 1;
    }
    const created = await call("POST", base, body);
    if (created.status >= 300) {
      problems.push(
        `POST ${base}: ${created.status} ${JSON.stringify(created.json ?? created.text).slice(0, 300)}`,
      );
      continue;
    }
    problems.push(...mismatches(created.json, schemas[kind], `POST ${kind}`));
    checked++;
    // The warm pool must have a ready member before the claim can adopt one.
    if (kind === "SandboxWarmPool") {
      for (let i = 0; i < 240; i++) {
        const pool = await call("GET", `${base}/fidelity-pool`);
        if ((pool.json?.status?.readyReplicas ?? 0) >= 1) break;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }
  // Let the controller write the statuses (ready sandboxes, the adopted claim).
  for (let i = 0; i < 240; i++) {
    const claim = await call(
      "GET",
      "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxclaims/fidelity-claim",
    );
    const sandbox = await call(
      "GET",
      "/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes/fidelity-sandbox",
    );
    const ready = (o) => o.json?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
    if (ready(claim) && ready(sandbox)) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  for (const [kind, base, body] of objects) {
    const got = await call("GET", `${base}/${body.metadata.name}`);
    if (got.status !== 200) problems.push(`GET ${kind}: ${got.status}`);
    else problems.push(...mismatches(got.json, schemas[kind], `GET ${kind}`));
    // A status the controller never wrote would pass any schema: each kind must have one to be judged.
    if (kind !== "SandboxTemplate" && Object.keys(got.json?.status ?? {}).length === 0)
      problems.push(`GET ${kind}: no status (the controller did not reconcile it)`);
    const listed = await call("GET", base);
    for (const [i, item] of (listed.json?.items ?? []).entries()) {
      problems.push(...mismatches(item, schemas[kind], `LIST ${kind}.items[${i}]`));
    }
    checked += 1 + (listed.json?.items?.length ?? 0);
  }
} finally {
  await emulator.close();
}

if (problems.length > 0) {
  console.error(
    `kubernetes-fidelity: ${problems.length} mismatch(es) against agent-sandbox's CRDs:\n  ${problems.join("\n  ")}`,
  );
  process.exitCode = 1;
} else {
  console.log(
    `kubernetes-fidelity: ${checked} objects of 4 kinds match agent-sandbox's CRD schemas (v1beta1)`,
  );
}
