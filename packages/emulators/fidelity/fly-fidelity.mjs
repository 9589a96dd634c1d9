#!/usr/bin/env node
// Checks the Fly Machines emulator against Fly's own material: superfly/fly-go's request shapes and the
// Machines API OpenAPI spec.
//
//   pnpm build            (the emulators, core and provider-fly dists are used)
//   pnpm --filter @sbox/emulators fidelity:fly -- --fly-go /path/to/fly-go --spec /path/to/FlyMachines \
//        --fly-docs /path/to/superfly/docs [--spec-commit <sha>] [--backend local|docker] [--skip-provider]
//
// All three are brought by the developer with the `fetch` tool and nothing of them is committed here (a work
// tree or a bare mirror works for each):
//   fetch github:superfly/fly-go          fly-go, whose request shapes are read from its source;
//   fetch github:OutboundSpade/FlyMachines the Machines API spec: its `spec.json` at commit d23c127 is Fly's
//                                         https://docs.machines.dev/spec/openapi3.json as downloaded on
//                                         2024-09-13 (the repository's next commit edits it, so that commit
//                                         is the one read). It is the newest copy of the published spec a
//                                         fetch brings: superfly/docs' snapshot carries only the February
//                                         2024 one (partials/_machines-spec.json, which has no suspend route);
//   fetch github:superfly/docs            Fly's documentation, the evidence of the spec errata below.
// `--spec` also takes a spec file itself (JSON), or another checkout (its HEAD:spec.json,
// api/machines/openapi.json or partials/_machines-spec.json is read, or the one at --spec-commit).
//
// Part 1 (fly-go): every machine and app call of fly-go's flaps client is sent to the emulator the way
// fly-go sends it. The shape of each call — HTTP method, endpoint format, query additions, whether the
// lease nonce header goes with it, the JSON field names of its body — is read from the checkout (the
// function's source and the structs' json tags); a call whose source no longer matches this harness is
// reported as drift instead of being guessed. Each answer is checked against the spec: the status is the
// one the spec declares (or, for the failures a scenario provokes, the one Fly documents), the body
// validates against the declared schema (types, enums, required fields), and the fields fly-go decodes
// are there. Calls fly-go makes that the spec does not describe are listed as notes, not counted.
//
// Part 2 (provider-fly): provider-fly runs a sandbox lifecycle against the emulator through a recording
// proxy; every request it sends must be one the spec describes (route, query parameters, body schema,
// `FlyV1` for macaroon tokens, the nonce on leased calls) and every answer is checked as in part 1. A query
// parameter fly-go itself sends on the same route is a note, as in part 1.
//
// The published spec is older than the API fly-go and Fly's docs describe now. fidelity/fly-spec-errata.json
// lists, for one spec document (by its sha256), the places where it is: each erratum names the mismatch it
// explains and a file of fly-go or superfly/docs that must say otherwise; a mismatch is explained only
// when that evidence is found in the checkout given, so nothing is excused on this harness's word alone.
//
// fly-go calls this harness does not run are listed in fidelity/fly-cannot-apply.json with the reason.
// Exit status: 0 when both parts have no unexplained mismatch and nothing drifted, 1 otherwise.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import { join, resolve } from "node:path";

const here = import.meta.dirname;
const packages = join(here, "..", "..");

function usage(message) {
  if (message) console.error(`fly-fidelity: ${message}`);
  console.error(
    "usage: fly-fidelity.mjs --fly-go <fly-go checkout> --spec <FlyMachines checkout | openapi.json> [--fly-docs <superfly/docs checkout>] [--spec-commit <sha>] [--backend local|docker] [--skip-provider]",
  );
  process.exit(2);
}

const args = process.argv.slice(2).filter((a) => a !== "--");
let flyGo;
let specPath;
let specCommit;
let flyDocs;
let backend = "local";
let skipProvider = false;
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  if (arg === "--fly-go") flyGo = resolve(args[++i] ?? usage("--fly-go needs a path"));
  else if (arg === "--spec") specPath = resolve(args[++i] ?? usage("--spec needs a path"));
  else if (arg === "--spec-commit") specCommit = args[++i] ?? usage("--spec-commit needs a commit");
  else if (arg === "--fly-docs") flyDocs = resolve(args[++i] ?? usage("--fly-docs needs a path"));
  else if (arg === "--backend") backend = args[++i] ?? usage("--backend needs a value");
  else if (arg === "--skip-provider") skipProvider = true;
  else usage(`unknown argument ${arg}`);
}
if (!flyGo) usage("--fly-go is required");
if (!specPath) usage("--spec is required");
if (!existsSync(specPath)) usage(`no spec at ${specPath}`);
if (specCommit !== undefined && !/^[0-9a-f]{7,40}$/i.test(specCommit))
  usage("--spec-commit is not a commit id");

// ---------------------------------------------------------------------------------------------------
// Checkouts (work trees or bare mirrors) and the files read from them.

/** `path` at `commit` (HEAD when absent) of the checkout `root`, or undefined. */
function readFromCheckout(root, path, commit) {
  const file = join(root, path);
  if (commit === undefined && existsSync(file)) return readFileSync(file, "utf8");
  for (const gitDir of [root, join(root, ".git")]) {
    const shown = spawnSync("git", ["--git-dir", gitDir, "show", `${commit ?? "HEAD"}:${path}`], {
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    });
    if (shown.status === 0) return shown.stdout;
  }
  return undefined;
}

/** The commit `ref` names in checkout `root`, or "unknown". */
function commitOf(root, ref = "HEAD") {
  for (const [flag, dir] of [
    ["-C", root],
    ["--git-dir", root],
  ]) {
    const run = spawnSync("git", [flag, dir, "rev-parse", `${ref}^{commit}`], { encoding: "utf8" });
    if (run.status === 0) return run.stdout.trim();
  }
  return "unknown";
}

function readGo(path) {
  return (
    readFromCheckout(flyGo, path) ?? usage(`${flyGo} has no ${path} (is it a superfly/fly-go checkout?)`)
  );
}

const flyGoCommit = () => commitOf(flyGo);

/**
 * Where a checkout keeps the Machines API spec: OutboundSpade/FlyMachines' spec.json at the commit that
 * added it unchanged (its next commit edits the document), then the usual names at HEAD.
 */
const SPEC_LOCATIONS = [
  { path: "spec.json", commit: "d23c127d9e0de2a8d796f01e26d3e3df5ff33306" },
  { path: "spec.json" },
  { path: "api/machines/openapi.json" },
  { path: "partials/_machines-spec.json" },
];

function loadSpec() {
  if (statSync(specPath).isFile()) return { text: readFileSync(specPath, "utf8"), from: specPath };
  const locations = specCommit
    ? SPEC_LOCATIONS.map((l) => ({ path: l.path, commit: specCommit }))
    : SPEC_LOCATIONS;
  for (const location of locations) {
    const text = readFromCheckout(specPath, location.path, location.commit);
    if (text !== undefined) {
      const commit = commitOf(specPath, location.commit ?? "HEAD");
      return { text, from: `${specPath} ${location.path} @ ${commit}` };
    }
  }
  return usage(
    `${specPath} holds no Machines API spec (${SPEC_LOCATIONS.map((l) => l.path).join(", ")}); is it a OutboundSpade/FlyMachines checkout?`,
  );
}

/** The bodies of `func (f *Client) Name(...)` in a Go file, by name. */
function clientFunctions(source) {
  const out = new Map();
  const starts = [...source.matchAll(/^func \(f \*Client\) ([A-Za-z_]+)\(/gm)];
  for (let i = 0; i < starts.length; i++) {
    const end = i + 1 < starts.length ? starts[i + 1].index : source.length;
    out.set(starts[i][1], source.slice(starts[i].index, end));
  }
  return out;
}

/** The json names of a Go struct's fields (`json:"name,omitempty"`; `-` fields left out). */
function jsonFields(source, struct) {
  const match = new RegExp(`^type ${struct} struct \\{([\\s\\S]*?)^\\}`, "m").exec(source);
  if (!match) return undefined;
  const fields = [];
  for (const tag of match[1].matchAll(/json:"([^",]*)(,omitempty)?/g)) {
    if (tag[1] && tag[1] !== "-") fields.push({ name: tag[1], omitempty: Boolean(tag[2]) });
  }
  return fields;
}

const flaps = new Map([
  ...clientFunctions(readGo("flaps/flaps_machines.go")),
  ...clientFunctions(readGo("flaps/flaps_machines_wait.go")),
  ...clientFunctions(readGo("flaps/flaps_apps.go")),
]);
const machineTypes = readGo("machine_types.go");
const appsSource = readGo("flaps/flaps_apps.go");
const waitSource = readGo("flaps/flaps_machines_wait.go");
const tokensSource = readGo("tokens/tokens.go");
const flapsSource = readGo("flaps/flaps.go");

const drift = [];
function expectInSource(fn, fragments) {
  const body = flaps.get(fn);
  if (!body) {
    drift.push(`${fn}: not in fly-go's flaps client any more`);
    return false;
  }
  const missing = fragments.filter((f) => !body.includes(f));
  if (missing.length > 0)
    drift.push(`${fn}: its source no longer contains ${missing.map((m) => JSON.stringify(m)).join(", ")}`);
  return missing.length === 0;
}

// fly-go sends macaroons with FlyV1 and user tokens with Bearer (tokens.normalized), always under /v1.
if (!/scheme = "FlyV1 "/.test(tokensSource)) drift.push("tokens.go: the FlyV1 scheme for macaroons is gone");
if (!flapsSource.includes('fmt.Sprintf("/v1%s", path)'))
  drift.push("flaps.go: endpoints are no longer under /v1");
const waitQuery = [...waitSource.matchAll(/url:"([a-z_]+),omitempty"/g)].map((m) => m[1]);

const structs = {
  LaunchMachineInput: jsonFields(machineTypes, "LaunchMachineInput"),
  StopMachineInput: jsonFields(machineTypes, "StopMachineInput"),
  MachineExecRequest: jsonFields(machineTypes, "MachineExecRequest"),
  CreateAppRequest: jsonFields(appsSource, "CreateAppRequest"),
  MachineLeaseData: jsonFields(machineTypes, "MachineLeaseData"),
  MachineExecResponse: jsonFields(machineTypes, "MachineExecResponse"),
};
for (const [name, fields] of Object.entries(structs)) if (!fields) drift.push(`fly-go has no struct ${name}`);

/** The body fly-go would marshal from `sample`: only its struct's fields, zero values of omitempty ones left out. */
function bodyOf(struct, sample) {
  const fields = new Map((structs[struct] ?? []).map((f) => [f.name, f]));
  const zero = (v) => v === "" || v === false || v === 0 || v === null || v === undefined;
  return Object.fromEntries(
    Object.entries(sample).filter(
      ([key, value]) => fields.has(key) && !(fields.get(key).omitempty && zero(value)),
    ),
  );
}

// ---------------------------------------------------------------------------------------------------
// The spec: route matching and a small JSON-schema check (what OpenAPI 3.0 uses here).

const specSource = loadSpec();
const specSha256 = createHash("sha256").update(specSource.text).digest("hex");
const spec = JSON.parse(specSource.text);
// Fly publishes the spec with its base path in `servers` (`https://api.machines.dev/v1`, paths `/apps/...`);
// requests carry it, so the templates get it too.
const basePath = (() => {
  try {
    return new URL(spec.servers?.[0]?.url ?? "http://x/").pathname.replace(/\/+$/, "");
  } catch {
    return "";
  }
})();
const routes = Object.entries(spec.paths ?? {}).map(([path, operations]) => {
  const template = basePath && !path.startsWith(`${basePath}/`) ? `${basePath}${path}` : path;
  const pattern = template
    .replace(/[.*+?^$()|[\]\\]/g, "\\$&")
    .replace(/\\?\{[^}]+\\?\}/g, "[^/]+")
    .replace(/\{[^}]+\}/g, "[^/]+");
  return { template, regex: new RegExp(`^${pattern}$`), operations };
});

function operationOf(method, path) {
  // Prefer the most specific template (fewest parameters) when several match.
  const matches = routes.filter((r) => r.regex.test(path) && r.operations[method.toLowerCase()]);
  matches.sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0));
  const route = matches[0];
  return route ? { template: route.template, operation: route.operations[method.toLowerCase()] } : undefined;
}

function resolveRef(schema) {
  let current = schema;
  while (current?.$ref) {
    const name = current.$ref.replace("#/components/schemas/", "");
    current = spec.components?.schemas?.[name];
    if (!current) return { unresolved: name };
  }
  return current;
}

/** Problems of `value` against `schema`, each with its JSON path; `extras` gets undeclared properties. */
function validate(schema, value, path = "$", problems = [], extras = []) {
  const s = resolveRef(schema);
  if (!s || s.unresolved) {
    problems.push(`${path}: the spec's schema ${s?.unresolved ?? "?"} is missing`);
    return problems;
  }
  for (const part of s.allOf ?? []) validate(part, value, path, problems, extras);
  if (value === null || value === undefined) return problems;
  const type = s.type;
  const actual = Array.isArray(value) ? "array" : typeof value;
  if (type === "integer" && !Number.isInteger(value))
    problems.push(`${path}: expected an integer, got ${JSON.stringify(value)}`);
  else if (type === "number" && typeof value !== "number")
    problems.push(`${path}: expected a number, got ${actual}`);
  else if (type === "string" && typeof value !== "string")
    problems.push(`${path}: expected a string, got ${actual}`);
  else if (type === "boolean" && typeof value !== "boolean")
    problems.push(`${path}: expected a boolean, got ${actual}`);
  else if (type === "array" && !Array.isArray(value))
    problems.push(`${path}: expected an array, got ${actual}`);
  else if (type === "object" && actual !== "object")
    problems.push(`${path}: expected an object, got ${actual}`);
  if (s.enum && !s.enum.includes(value))
    problems.push(`${path}: ${JSON.stringify(value)} is not one of ${s.enum.join(", ")}`);
  if (type === "array" && Array.isArray(value) && s.items) {
    for (const [i, item] of value.entries()) validate(s.items, item, `${path}[${i}]`, problems, extras);
  }
  if ((type === "object" || s.properties) && actual === "object") {
    for (const key of s.required ?? [])
      if (!(key in value)) problems.push(`${path}: required field ${key} is missing`);
    for (const [key, item] of Object.entries(value)) {
      if (s.properties?.[key]) validate(s.properties[key], item, `${path}.${key}`, problems, extras);
      else if (s.additionalProperties && typeof s.additionalProperties === "object") {
        validate(s.additionalProperties, item, `${path}.${key}`, problems, extras);
      } else if (s.properties && !s.additionalProperties) extras.push(`${path}.${key}`);
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------------
// The emulator, and a recording proxy in front of it (headers and bodies of both directions).

async function importDist(relative, what) {
  const file = join(packages, relative);
  if (!existsSync(file)) usage(`${file} is missing: run \`pnpm build\` first (${what})`);
  return import(file);
}
const { startFlyEmulator } = await importDist("emulators/dist/fly/index.js", "the emulator");
const emulator = await startFlyEmulator({
  backend,
  apps: ["fidelity-fly"],
  destroyedLingerMs: 30_000,
  images: { "registry.fidelity.invalid/never:1": false },
});
const target = new URL(emulator.url);

const exchanges = [];
const proxy = createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        const out = [];
        answer.on("data", (c) => out.push(c));
        answer.on("end", () => {
          const text = Buffer.concat(out).toString("utf8");
          exchanges.push({
            client: currentClient,
            method: req.method,
            url: req.url,
            headers: req.headers,
            body: body.length ? body.toString("utf8") : undefined,
            status: answer.statusCode,
            responseHeaders: answer.headers,
            response: text,
          });
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          res.end(text);
        });
      },
    );
    upstream.on("error", (error) => {
      res.writeHead(502);
      res.end(String(error));
    });
    upstream.end(body);
  });
});
await new Promise((done) => proxy.listen(0, "127.0.0.1", done));
const proxyUrl = `http://127.0.0.1:${proxy.address().port}`;
let currentClient = "fly-go";

const token = emulator.token.replace(/^FlyV1 /, "");
/** fly-go's FlapsHeader(): `FlyV1 ` and the macaroons for macaroon tokens. */
const flapsAuthorization = `${token.startsWith("fm") ? "FlyV1" : "Bearer"} ${token}`;

// ---------------------------------------------------------------------------------------------------
// Part 1: fly-go's calls.

const mismatches = { server: [], provider: [] };
const notes = new Set();

function parseJson(text) {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Checks one exchange against the spec. `expect` is the status the scenario provokes (a documented Fly
 * failure such as 409 on a held lease) when it is not a success.
 */
function checkAnswer(side, label, exchange, expect) {
  const path = exchange.url.split("?")[0];
  const found = operationOf(exchange.method, path);
  const problems = [];
  if (!found) {
    problems.push(`${exchange.method} ${path} is not a route of the spec`);
  } else {
    const declared = Object.keys(found.operation.responses ?? {});
    const status = String(exchange.status);
    const said = exchange.status >= 400 ? ` (${exchange.response.slice(0, 160)})` : "";
    if (expect !== undefined) {
      if (exchange.status !== expect) problems.push(`answered ${status}, Fly answers ${expect} here${said}`);
    } else if (!declared.includes(status)) {
      problems.push(`answered ${status}; the spec declares ${declared.join("/")}${said}`);
    }
    const body = parseJson(exchange.response);
    const content = found.operation.responses?.[status]?.content ?? {};
    const schema = content["application/json"]?.schema;
    if (exchange.status >= 400) {
      // Failures carry ErrorResponse: { error, status? }.
      const errorSchema = schema ?? { $ref: "#/components/schemas/ErrorResponse" };
      if (typeof body !== "object" || body === null || typeof body.error !== "string") {
        problems.push(
          `a ${status} without an ErrorResponse body (${JSON.stringify(exchange.response).slice(0, 120)})`,
        );
      } else {
        problems.push(...validate(errorSchema, body));
      }
    } else if (schema) {
      if (body === undefined) problems.push("no body where the spec declares one");
      else {
        const extras = [];
        problems.push(...validate(schema, body, "$", [], extras));
        for (const extra of extras)
          notes.add(`${found.template} answers ${extra}, which the spec does not declare`);
      }
    }
  }
  for (const problem of problems) mismatches[side].push(`${label}: ${problem}`);
  return parseJson(exchange.response);
}

const exercised = new Set();
/** `METHOD template key` of every query parameter fly-go's calls send. */
const flyGoQuery = new Set();

async function flyGoCall(label, { fn, fragments = [], method, path, query, body, nonce, expect }) {
  exercised.add(fn);
  expectInSource(fn, fragments);
  const url = `/v1${path}${query ? `?${query}` : ""}`;
  const headers = { Authorization: flapsAuthorization, "User-Agent": "fly-go (fidelity harness)" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (nonce) headers["fly-machine-lease-nonce"] = nonce;
  const before = exchanges.length;
  const response = await fetch(`${proxyUrl}${url}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  await response.arrayBuffer();
  const exchange = exchanges[before];
  if (!exchange) throw new Error(`${label}: the proxy recorded nothing`);
  // What fly-go sends that the spec does not describe is noted (not the emulator's mismatch).
  const found = operationOf(method, url.split("?")[0]);
  if (found) {
    const params = new Set(
      (found.operation.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name),
    );
    for (const key of new URLSearchParams(query ?? "").keys()) {
      flyGoQuery.add(`${method} ${found.template} ${key}`);
      if (!params.has(key) && !(key.startsWith("metadata.") && params.has("metadata.{key}"))) {
        notes.add(
          `fly-go ${fn} sends ?${key}=, which the spec does not list for ${method} ${found.template}`,
        );
      }
    }
    const requestSchema = found.operation.requestBody?.content?.["application/json"]?.schema;
    if (body !== undefined && requestSchema) {
      for (const problem of validate(requestSchema, body, "body"))
        notes.add(`fly-go ${fn} sends ${problem} (the spec's request schema)`);
    }
    if (body === undefined && found.operation.requestBody?.required) {
      notes.add(`fly-go ${fn} sends no body where the spec marks one required`);
    }
  }
  return checkAnswer("server", `fly-go ${label}`, exchange, expect);
}

const app = "fidelity-fly";
const machinePath = (id, rest = "") => `/apps/${app}/machines/${id}${rest}`;
const config = {
  image: "registry-1.docker.io/library/alpine:3.20",
  env: { FIDELITY: "1" },
  guest: { cpu_kind: "shared", cpus: 1, memory_mb: 256 },
  restart: { policy: "no" },
  metadata: { harness: "fly-fidelity" },
};

async function waitCall(label, id, states, extra = {}) {
  const params = new URLSearchParams();
  if (extra.version) params.set("version", extra.version);
  params.set("timeout", "60");
  for (const state of states) params.append("state", state);
  for (const key of params.keys())
    if (!waitQuery.includes(key)) drift.push(`Wait: fly-go no longer sends ${key}`);
  return flyGoCall(label, {
    fn: "Wait",
    fragments: ['fmt.Sprintf("/%s/wait", machineID)', "http.MethodGet"],
    method: "GET",
    path: machinePath(id, "/wait"),
    query: params.toString(),
    expect: extra.expect,
  });
}

async function partFlyGo() {
  const appName = "fidelity-fly-go";
  await flyGoCall("CreateApp", {
    fn: "CreateApp",
    fragments: ['"/apps?wait=true"', "http.MethodPost"],
    method: "POST",
    path: "/apps",
    query: "wait=true",
    body: bodyOf("CreateAppRequest", { name: appName, org_slug: "personal", network: "", app_role_id: "" }),
  });
  await flyGoCall("CreateApp (name taken)", {
    fn: "CreateApp",
    method: "POST",
    path: "/apps",
    query: "wait=true",
    body: bodyOf("CreateAppRequest", { name: appName, org_slug: "personal", network: "", app_role_id: "" }),
    expect: 422,
  });
  await flyGoCall("GetApp", {
    fn: "GetApp",
    fragments: ['"/apps/"+url.PathEscape(name)'],
    method: "GET",
    path: `/apps/${appName}`,
  });
  await flyGoCall("ListApps", {
    fn: "ListApps",
    fragments: ['query.Set("org_slug"', '"/apps?"'],
    method: "GET",
    path: "/apps",
    query: "org_slug=personal",
  });

  const launched = await flyGoCall("Launch", {
    fn: "Launch",
    fragments: ["http.MethodPost", 'http.MethodPost, "", builder'],
    method: "POST",
    path: `/apps/${app}/machines`,
    body: bodyOf("LaunchMachineInput", {
      config,
      name: "fidelity-1",
      region: "",
      skip_launch: false,
      skip_secrets: false,
    }),
  });
  const id = launched?.id;
  if (typeof id !== "string") throw new Error(`Launch answered no machine id: ${JSON.stringify(launched)}`);
  await waitCall("Wait started", id, ["started"], { version: launched.version ?? launched.instance_id });
  const got = await flyGoCall("Get", {
    fn: "Get",
    fragments: ['fmt.Sprintf("/%s", machineID)', "http.MethodGet"],
    method: "GET",
    path: machinePath(id),
  });
  for (const field of ["id", "state", "region", "instance_id", "config", "created_at"]) {
    if (got?.[field] === undefined)
      mismatches.server.push(`fly-go Get: the machine has no ${field}, which fly.Machine decodes`);
  }
  await flyGoCall("List", {
    fn: "List",
    fragments: ["http.MethodGet, getEndpoint"],
    method: "GET",
    path: `/apps/${app}/machines`,
  });
  await flyGoCall("List (state)", {
    fn: "List",
    fragments: ['fmt.Sprintf("?%s", state)'],
    method: "GET",
    path: `/apps/${app}/machines`,
    query: "state=started",
  });
  const exec = await flyGoCall("Exec", {
    fn: "Exec",
    fragments: ['fmt.Sprintf("/%s/exec", machineID)', "http.MethodPost"],
    method: "POST",
    path: machinePath(id, "/exec"),
    body: bodyOf("MachineExecRequest", { cmd: "echo fidelity", timeout: 10, command: ["echo", "fidelity"] }),
  });
  if (exec?.stdout !== "fidelity\n")
    mismatches.server.push(`fly-go Exec: stdout ${JSON.stringify(exec?.stdout)}, expected "fidelity\\n"`);
  await flyGoCall("GetProcesses", {
    fn: "GetProcesses",
    fragments: ['fmt.Sprintf("/%s/ps", machineID)'],
    method: "GET",
    path: machinePath(id, "/ps"),
  });

  const lease = await flyGoCall("AcquireLease", {
    fn: "AcquireLease",
    fragments: [
      'fmt.Sprintf("/%s/lease", machineID)',
      'fmt.Sprintf("?ttl=%d", *ttl)',
      "http.MethodPost, endpoint, nil",
    ],
    method: "POST",
    path: machinePath(id, "/lease"),
    query: "ttl=30",
  });
  const nonce = lease?.data?.nonce;
  if (typeof nonce !== "string") {
    mismatches.server.push(
      `fly-go AcquireLease: no data.nonce, which fly.MachineLease decodes (got ${JSON.stringify(lease)})`,
    );
  }
  await flyGoCall("AcquireLease (held)", {
    fn: "AcquireLease",
    method: "POST",
    path: machinePath(id, "/lease"),
    query: "ttl=30",
    expect: 409,
  });
  await flyGoCall("FindLease", {
    fn: "FindLease",
    fragments: ["http.MethodGet, endpoint"],
    method: "GET",
    path: machinePath(id, "/lease"),
  });
  await flyGoCall("RefreshLease", {
    fn: "RefreshLease",
    fragments: ["headers[NonceHeader] = []string{nonce}"],
    method: "POST",
    path: machinePath(id, "/lease"),
    query: "ttl=30",
    nonce,
  });
  const updated = await flyGoCall("Update", {
    fn: "Update",
    fragments: ['fmt.Sprintf("/%s", builder.ID)', "headers[NonceHeader]"],
    method: "POST",
    path: machinePath(id),
    body: bodyOf("LaunchMachineInput", {
      config: { ...config, env: { FIDELITY: "2" } },
      skip_launch: false,
      skip_secrets: false,
    }),
    nonce,
  });
  await flyGoCall("Update (without the nonce)", {
    fn: "Update",
    method: "POST",
    path: machinePath(id),
    body: { config },
    expect: 409,
  });
  await waitCall("Wait started (new version)", id, ["started"], {
    version: updated?.version ?? updated?.instance_id,
  });
  await flyGoCall("Cordon", {
    fn: "Cordon",
    fragments: ['fmt.Sprintf("/%s/cordon", machineID)'],
    method: "POST",
    path: machinePath(id, "/cordon"),
    nonce,
  });
  await flyGoCall("Uncordon", {
    fn: "Uncordon",
    fragments: ['fmt.Sprintf("/%s/uncordon", machineID)'],
    method: "POST",
    path: machinePath(id, "/uncordon"),
    nonce,
  });
  await flyGoCall("SetMetadata", {
    fn: "SetMetadata",
    fragments: ['fmt.Sprintf("/%s/metadata/%s", machineID, key)', '"value": value'],
    method: "POST",
    path: machinePath(id, "/metadata/fidelity-key"),
    body: { value: "v" },
  });
  const metadata = await flyGoCall("GetMetadata", {
    fn: "GetMetadata",
    fragments: ['fmt.Sprintf("/%s/metadata", machineID)'],
    method: "GET",
    path: machinePath(id, "/metadata"),
  });
  if (metadata?.["fidelity-key"] !== "v")
    mismatches.server.push(
      `fly-go GetMetadata: fidelity-key is ${JSON.stringify(metadata?.["fidelity-key"])}`,
    );
  await flyGoCall("DeleteMetadata", {
    fn: "DeleteMetadata",
    fragments: ["http.MethodDelete, endpoint"],
    method: "DELETE",
    path: machinePath(id, "/metadata/fidelity-key"),
  });
  await flyGoCall("Stop", {
    fn: "Stop",
    fragments: ['fmt.Sprintf("/%s/stop", in.ID)', "http.MethodPost, stopEndpoint, in"],
    method: "POST",
    path: machinePath(id, "/stop"),
    body: bodyOf("StopMachineInput", { id, signal: "SIGTERM", timeout: "10s" }),
    nonce,
  });
  await waitCall("Wait stopped", id, ["stopped"]);
  await flyGoCall("Start", {
    fn: "Start",
    fragments: ['fmt.Sprintf("/%s/start", machineID)'],
    method: "POST",
    path: machinePath(id, "/start"),
    nonce,
  });
  await waitCall("Wait started (after start)", id, ["started"]);
  await flyGoCall("Restart", {
    fn: "Restart",
    fragments: [
      'fmt.Sprintf("/%s/restart?force_stop=%t", in.ID, in.ForceStop)',
      'fmt.Sprintf("&timeout=%s", in.Timeout)',
      'fmt.Sprintf("&signal=%s", in.Signal)',
    ],
    method: "POST",
    path: machinePath(id, "/restart"),
    query: "force_stop=false&timeout=10s&signal=SIGTERM",
    nonce,
  });
  await waitCall("Wait started (after restart)", id, ["started"]);
  await flyGoCall("Suspend", {
    fn: "Suspend",
    fragments: ['fmt.Sprintf("/%s/suspend", machineID)'],
    method: "POST",
    path: machinePath(id, "/suspend"),
    nonce,
  });
  await waitCall("Wait suspended", id, ["suspended"]);
  await flyGoCall("Start (resume)", { fn: "Start", method: "POST", path: machinePath(id, "/start"), nonce });
  await waitCall("Wait started (resumed)", id, ["started"]);
  await flyGoCall("Kill", {
    fn: "Kill",
    fragments: ['"signal": 9', 'fmt.Sprintf("/%s/signal", machineID)'],
    method: "POST",
    path: machinePath(id, "/signal"),
    body: { signal: 9 },
  });
  await waitCall("Wait stopped (killed)", id, ["stopped"]);
  await flyGoCall("ReleaseLease", {
    fn: "ReleaseLease",
    fragments: ["http.MethodDelete, endpoint, nil, nil, headers"],
    method: "DELETE",
    path: machinePath(id, "/lease"),
    nonce,
  });
  await flyGoCall("Destroy", {
    fn: "Destroy",
    fragments: ['fmt.Sprintf("/%s?kill=%t", input.ID, input.Kill)', "http.MethodDelete"],
    method: "DELETE",
    path: machinePath(id),
    query: "kill=true",
  });
  await waitCall("Wait destroyed", id, ["destroyed"]);
  const gone = await flyGoCall("Get (destroyed)", { fn: "Get", method: "GET", path: machinePath(id) });
  if (gone?.state !== "destroyed")
    mismatches.server.push(
      `fly-go Get after Destroy: state ${JSON.stringify(gone?.state)}, Fly keeps "destroyed" a while`,
    );
  await flyGoCall("Get (unknown machine)", {
    fn: "Get",
    method: "GET",
    path: machinePath("0000000000fidelity"),
    expect: 404,
  });

  // A boot that cannot succeed: the machine fails, and a wait for started-or-failed says so.
  const failing = await flyGoCall("Launch (unpullable image)", {
    fn: "Launch",
    method: "POST",
    path: `/apps/${app}/machines`,
    body: bodyOf("LaunchMachineInput", {
      config: { ...config, image: "registry.fidelity.invalid/never:1" },
      skip_secrets: false,
    }),
  });
  if (typeof failing?.id === "string") {
    const waited = await waitCall("Wait started|failed", failing.id, ["started", "failed"]);
    if (waited?.state !== "failed")
      mismatches.server.push(
        `fly-go Wait on a failed boot: state ${JSON.stringify(waited?.state)}, expected "failed"`,
      );
    await flyGoCall("Destroy (failed)", {
      fn: "Destroy",
      method: "DELETE",
      path: machinePath(failing.id),
      query: "kill=true",
    });
  }
  await flyGoCall("DeleteApp", {
    fn: "DeleteApp",
    fragments: ['"/apps/"+name', "http.MethodDelete"],
    method: "DELETE",
    path: `/apps/${appName}`,
  });
  await flyGoCall("GetApp (deleted)", { fn: "GetApp", method: "GET", path: `/apps/${appName}`, expect: 404 });
}

// ---------------------------------------------------------------------------------------------------
// Part 2: provider-fly's own requests.

async function partProvider() {
  currentClient = "provider-fly";
  const { createSandboxClient } = await importDist("core/dist/index.js", "@sbox/core");
  const { fly } = await importDist("provider-fly/dist/index.js", "@sbox/provider-fly");
  const client = createSandboxClient({
    provider: fly({
      apiToken: emulator.token,
      appName: app,
      apiBaseUrl: proxyUrl,
      image: "registry-1.docker.io/library/alpine:3.20",
      previewUrl: ({ app: a, port }) => `${emulator.proxyUrl}/${a}/${port}`,
    }),
  });
  const sandbox = await client.create({
    env: { FIDELITY: "provider" },
    metadata: { harness: "fly-fidelity" },
  });
  try {
    const run = await sandbox.commands.run("echo provider-fly");
    if (run.stdout !== "provider-fly\n")
      mismatches.provider.push(`provider-fly run: stdout ${JSON.stringify(run.stdout)}`);
    await sandbox.files.write("fidelity.txt", "through exec");
    if ((await sandbox.files.readText("fidelity.txt")) !== "through exec")
      mismatches.provider.push("provider-fly files: read back differs");
    // Longer than Fly's 30 s exec limit: provider-fly must not send it as one exec.
    const long = await sandbox.commands.run("sleep 32; echo long", { timeoutMs: 90_000 });
    if (long.stdout !== "long\n")
      mismatches.provider.push(`provider-fly long command: stdout ${JSON.stringify(long.stdout)}`);
    for await (const _ of client.list({ metadata: { harness: "fly-fidelity" } })) {
      // listing is what is checked
    }
    await sandbox.pause();
    await sandbox.resume();
    if ((await sandbox.commands.run("cat fidelity.txt")).stdout !== "through exec") {
      mismatches.provider.push("provider-fly pause/resume: the file is gone");
    }
  } finally {
    await sandbox.destroy();
    await client.dispose();
  }
  for (const exchange of exchanges.filter((e) => e.client === "provider-fly")) {
    const path = exchange.url.split("?")[0];
    const label = `provider-fly ${exchange.method} ${exchange.url}`;
    const auth = String(exchange.headers.authorization ?? "");
    if (auth !== `FlyV1 ${token}`)
      mismatches.provider.push(
        `${label}: Authorization is ${auth.split(" ")[0] || "missing"} …, fly-go sends "FlyV1 <macaroon>"`,
      );
    const found = operationOf(exchange.method, path);
    if (!found) {
      mismatches.provider.push(`${label}: not a route of the spec`);
      continue;
    }
    const params = new Set(
      (found.operation.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name),
    );
    for (const [key, value] of new URLSearchParams(exchange.url.split("?")[1] ?? "")) {
      if (!params.has(key) && !(key.startsWith("metadata.") && params.has("metadata.{key}"))) {
        if (flyGoQuery.has(`${exchange.method} ${found.template} ${key}`)) {
          notes.add(
            `provider-fly sends ?${key}= as fly-go does, which the spec does not list for ${exchange.method} ${found.template}`,
          );
        } else {
          mismatches.provider.push(
            `${label}: ?${key}= is not a parameter of ${exchange.method} ${found.template}`,
          );
        }
        continue;
      }
      const param = (found.operation.parameters ?? []).find((p) => p.name === key);
      const schema = param?.schema;
      if (schema?.enum)
        for (const v of value.split(","))
          if (!schema.enum.includes(v))
            mismatches.provider.push(`${label}: ${key}=${v} is not one of ${schema.enum.join(", ")}`);
      if (schema?.type === "integer" && !/^\d+$/.test(value))
        mismatches.provider.push(`${label}: ${key}=${value} is not an integer`);
      if (schema?.type === "boolean" && !["true", "false"].includes(value))
        mismatches.provider.push(`${label}: ${key}=${value} is not a boolean`);
    }
    const requestSchema = found.operation.requestBody?.content?.["application/json"]?.schema;
    if (exchange.body !== undefined && requestSchema) {
      for (const problem of validate(requestSchema, parseJson(exchange.body), "body"))
        mismatches.provider.push(`${label}: ${problem}`);
    }
    const nonceParam = (found.operation.parameters ?? []).find(
      (p) => p.name === "fly-machine-lease-nonce" && p.in === "header",
    );
    if (nonceParam?.required && !exchange.headers["fly-machine-lease-nonce"])
      mismatches.provider.push(`${label}: the required lease nonce header is missing`);
    // Failures provider-fly provokes on purpose (a 408 wait it retries, a 404 after destroy) are Fly's too.
    const expect =
      exchange.status === 408 && path.endsWith("/wait") ? 408 : exchange.status === 404 ? 404 : undefined;
    checkAnswer("provider", label, exchange, expect);
  }
}

// ---------------------------------------------------------------------------------------------------

const cannotApply = JSON.parse(readFileSync(join(here, "fly-cannot-apply.json"), "utf8"));
let failed = false;
try {
  await partFlyGo();
  if (!skipProvider) await partProvider();
} catch (error) {
  console.error(`fly-fidelity: the run stopped: ${error instanceof Error ? error.stack : String(error)}`);
  failed = true;
} finally {
  await emulator.close().catch(() => undefined);
  proxy.close();
}

// The spec's errata: a mismatch is explained only by an erratum of this very document whose evidence the
// checkout it names really holds.
const errataFile = JSON.parse(readFileSync(join(here, "fly-spec-errata.json"), "utf8"));
const errata = (errataFile.specs?.[specSha256]?.errata ?? []).map((e) => ({ ...e, used: 0 }));
const explained = [];
const unverified = new Set();
const checkouts = { "fly-go": flyGo, "fly-docs": flyDocs };
function evidenceHolds(evidence) {
  const root = checkouts[evidence.checkout];
  if (!root) {
    unverified.add(`${evidence.checkout} (give --${evidence.checkout} to check ${evidence.path})`);
    return false;
  }
  const text = readFromCheckout(root, evidence.path);
  if (text === undefined || !text.includes(evidence.contains)) {
    drift.push(
      `spec erratum evidence gone: ${evidence.checkout} ${evidence.path} no longer says ${JSON.stringify(evidence.contains)}`,
    );
    return false;
  }
  return true;
}
for (const side of ["server", "provider"]) {
  mismatches[side] = mismatches[side].filter((m) => {
    const erratum = errata.find((e) => e.side === side && new RegExp(e.mismatch).test(m));
    if (!erratum || !evidenceHolds(erratum.evidence)) return true;
    erratum.used++;
    explained.push(
      `${side === "server" ? "server  " : "provider"} ${m}\n      ${erratum.why} (${erratum.evidence.checkout} ${erratum.evidence.path})`,
    );
    return false;
  });
}
const unusedErrata = errata
  .filter((e) => e.used === 0 && (e.side === "server" || !skipProvider) && !failed)
  .map((e) => e.mismatch);

const listed = new Set(Object.keys(cannotApply.functions ?? {}));
const uncovered = [...flaps.keys()].filter(
  (fn) => !exercised.has(fn) && !listed.has(fn) && !fn.startsWith("_") && fn !== "sendRequestMachines",
);
const stale = [...listed].filter((fn) => exercised.has(fn) || !flaps.has(fn));

console.log(
  `\nFly fidelity — fly-go ${flyGoCommit()}, backend ${backend}\nspec ${spec.info?.title ?? "?"} (${Object.keys(spec.paths ?? {}).length} paths) from ${specSource.from}, sha256 ${specSha256}${flyDocs ? `\nfly docs ${commitOf(flyDocs)}` : ""}`,
);
console.log(
  `requests checked: ${exchanges.filter((e) => e.client === "fly-go").length} fly-go, ${exchanges.filter((e) => e.client === "provider-fly").length} provider-fly`,
);
console.log(`fly-go calls exercised: ${[...exercised].sort().join(", ")}`);
console.log(`mismatches: server ${mismatches.server.length}, provider-fly ${mismatches.provider.length}`);
for (const m of mismatches.server) console.log(`  server   ${m}`);
for (const m of mismatches.provider) console.log(`  provider ${m}`);
if (explained.length) {
  console.log(
    `explained by the spec's errata (fidelity/fly-spec-errata.json), not counted (${explained.length}):`,
  );
  for (const e of explained) console.log(`  ${e}`);
}
if (unverified.size) console.log(`errata not checked for want of a checkout: ${[...unverified].join("; ")}`);
if (unusedErrata.length)
  console.log(
    `fly-spec-errata.json entries of this spec that explained nothing: ${unusedErrata.join(" | ")}`,
  );
if (drift.length) {
  console.log(`drift between this harness and the fly-go checkout (${drift.length}):`);
  for (const d of drift) console.log(`  ${d}`);
}
if (uncovered.length)
  console.log(`fly-go calls neither run nor on fly-cannot-apply.json: ${uncovered.join(", ")}`);
if (stale.length)
  console.log(`fly-cannot-apply.json entries that are run or gone from fly-go: ${stale.join(", ")}`);
if (notes.size) {
  console.log(`notes — fly-go and the emulator agree here, the spec says less (${notes.size}):`);
  for (const n of [...notes].sort()) console.log(`  ${n}`);
}
const ok =
  !failed &&
  mismatches.server.length === 0 &&
  mismatches.provider.length === 0 &&
  drift.length === 0 &&
  uncovered.length === 0 &&
  stale.length === 0 &&
  unusedErrata.length === 0;
process.exit(ok ? 0 : 1);
