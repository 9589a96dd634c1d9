/**
 * Fidelity of the Daytona emulator against Daytona's own API descriptions, in two modes over the same
 * recorded exchanges:
 *
 * - always (CI, offline): against the published generated clients the SDK is built on,
 *   `@daytona/api-client` and `@daytona/toolbox-api-client` (devDependencies pinned to the SDK's version).
 *   They ship no OpenAPI document, only what OpenAPI Generator made of it — one interface or enum per schema
 *   and one request builder per operation — which `daytona-generated-clients.ts` reads back into JSON
 *   Schemas and operations: path template, method, query names and types, body schema or form fields,
 *   the answer's model. A second test mutates recorded answers and requests (a required field dropped, a
 *   field of the wrong type, an enum value Daytona does not have, an undeclared query parameter, an
 *   unknown route) and requires each mutation to be reported, so the check cannot pass by matching nothing.
 * - with `DAYTONA_CHECKOUT` (extra): against the OpenAPI documents of the control plane
 *   (`libs/api-client-go/api/openapi.yaml`) and of the toolbox (`libs/toolbox-api-client-go/api/openapi.yaml`)
 *   in the public daytonaio/daytona repository, read at tag `DAYTONA_SPEC_TAG` of a checkout the developer
 *   brought (`fetch github:daytonaio/daytona`; a work tree or a bare mirror). Nothing of it is committed
 *   here; without the variable that test is skipped, and says so.
 *
 * The unmodified `@daytonaio/sdk` runs a scenario that reaches every route the emulator serves, through a
 * recording proxy (the emulator advertises the proxy as its public URL, so toolbox calls go through it
 * too). Every exchange is then checked: the route and method exist, the query parameters are declared ones
 * of the declared types, the request body validates against the declared schema, a success answer
 * validates against its schema. Error answers (Daytona documents no error bodies) are checked for Daytona's
 * error shape instead. The summary (routes covered, exchanges, mismatches) is printed.
 *
 *   pnpm exec vitest run test/daytona-fidelity.test.ts
 *   DAYTONA_CHECKOUT=/work/.mirror/daytonaio+daytona/repo pnpm exec vitest run test/daytona-fidelity.test.ts
 */
import { spawnSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Daytona } from "@daytonaio/sdk";
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parse as parseYaml } from "yaml";
import { type DaytonaEmulator, startDaytonaEmulator } from "../src/daytona/index.js";
import {
  type GeneratedClient,
  type GeneratedOperation,
  readGeneratedClients,
} from "./daytona-generated-clients.js";

/** The release of daytonaio/daytona whose descriptions this check reads (the last one published there). */
const DAYTONA_SPEC_TAG = "v0.190.0";
const CHECKOUT = process.env.DAYTONA_CHECKOUT;
const API_KEY = "dtn_fidelity_0123456789abcdef0123456789abcdef";

type Json = Record<string, unknown>;

/** Headers the recording proxy does not pass on (they describe one connection, not the request). */
const HOP_BY_HOP = new Set([
  "host",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "content-length",
  "upgrade",
  "expect",
]);

interface Exchange {
  readonly method: string;
  readonly url: URL;
  readonly requestBody: Buffer;
  readonly requestType: string;
  readonly status: number;
  readonly responseType: string;
  readonly responseBody: Buffer;
}

interface Operation {
  readonly doc: "api" | "toolbox";
  readonly template: string;
  readonly method: string;
  readonly spec: Json;
  readonly pattern: RegExp;
}

function specText(path: string): string {
  const run = spawnSync("git", ["-C", CHECKOUT!, "show", `${DAYTONA_SPEC_TAG}:${path}`], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.status !== 0)
    throw new Error(`cannot read ${path} at ${DAYTONA_SPEC_TAG} from ${CHECKOUT}: ${run.stderr}`);
  return run.stdout;
}

/** Rewrites local refs to point into the registered document `doc`. */
function qualify(schema: unknown, doc: string): unknown {
  if (Array.isArray(schema)) return schema.map((s) => qualify(s, doc));
  if (typeof schema !== "object" || schema === null) return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    out[key] =
      key === "$ref" && typeof value === "string" && value.startsWith("#")
        ? `${doc}${value}`
        : qualify(value, doc);
  }
  return out;
}

function operationsOf(doc: "api" | "toolbox", spec: Json): Operation[] {
  const ops: Operation[] = [];
  for (const [template, methods] of Object.entries(spec.paths as Record<string, Json>)) {
    const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`);
    for (const [method, op] of Object.entries(methods)) {
      ops.push({ doc, template, method: method.toUpperCase(), spec: op as Json, pattern });
    }
  }
  // Literal segments win over parameters (`/process/session/entrypoint` before `/process/session/{id}`).
  return ops
    .sort((a, b) => (b.template.match(/\{/g)?.length ?? 0) - (a.template.match(/\{/g)?.length ?? 0))
    .reverse();
}

/** The SDK scenario: reaches every route the emulator serves, errors included. */
async function runScenario(apiUrl: string): Promise<void> {
  const daytona = new Daytona({ apiKey: API_KEY, apiUrl, target: "us", useDeprecatedPolling: true });
  const sandbox = await daytona.create(
    {
      name: "fidelity-1",
      envVars: { GREETING: "hi" },
      labels: { suite: "fidelity" },
      autoStopInterval: 30,
      autoArchiveInterval: 60,
      autoDeleteInterval: 120,
    },
    { timeout: 600 },
  );
  // From an image, with resources: the SDK sends `buildInfo` (FROM <image>) and the sizes.
  const built = await daytona.create(
    { image: "debian:bookworm", resources: { cpu: 2, memory: 2, disk: 4 }, labels: { suite: "fidelity" } },
    { timeout: 600 },
  );
  await daytona.get(built.id);
  await built.delete();
  await daytona.get(sandbox.id);
  await daytona.get("fidelity-1");
  for await (const listed of daytona.list({ labels: { suite: "fidelity" }, limit: 10 })) void listed;
  const sandboxApi = (
    daytona as unknown as { sandboxApi: { getToolboxProxyUrl(id: string): Promise<unknown> } }
  ).sandboxApi;
  await sandboxApi.getToolboxProxyUrl(sandbox.id);
  await sandbox.setLabels({ suite: "fidelity", step: "2" });
  await sandbox.setAutostopInterval(45);
  await sandbox.setAutoArchiveInterval(90);
  await sandbox.setAutoDeleteInterval(-1);
  await sandbox.getPreviewLink(3000);
  await sandbox.getSignedPreviewUrl(3000, 60);
  await sandbox.getWorkDir();
  await sandbox.getUserHomeDir();
  const bytes = Buffer.alloc(70_000);
  for (let i = 0; i < bytes.length; i++) bytes[i] = i % 251;
  await sandbox.fs.uploadFile(bytes, "/tmp/fidelity/data.bin");
  await sandbox.fs.setFilePermissions("/tmp/fidelity/data.bin", { mode: "640" });
  const back = await sandbox.fs.downloadFile("/tmp/fidelity/data.bin");
  expect(Buffer.compare(back, bytes)).toBe(0);
  await sandbox.fs.downloadFile("/tmp/fidelity/missing").catch(() => undefined);
  const one = await fetch(
    `${sandbox.toolboxProxyUrl}/${sandbox.id}/files/download?path=/tmp/fidelity/data.bin`,
    {
      headers: { Authorization: `Bearer ${API_KEY}` },
    },
  );
  expect(Buffer.compare(Buffer.from(await one.arrayBuffer()), bytes)).toBe(0);
  await sandbox.process.executeCommand("echo out; echo err >&2; exit 3", undefined, { A: "b" }, 10);
  await sandbox.process.createSession("s1");
  const sync = await sandbox.process.executeSessionCommand("s1", { command: "echo one" });
  const background = await sandbox.process.executeSessionCommand("s1", {
    command: "sleep 0.2; echo two",
    runAsync: true,
  });
  await sandbox.process.getSessionCommand("s1", background.cmdId);
  await sandbox.process.getSessionCommandLogs("s1", sync.cmdId);
  await sandbox.process.getSession("s1");
  await sandbox.process.listSessions();
  await sandbox.process.deleteSession("s1");
  // Terminals: the HTTP routes (create as `@daytona/toolbox-api-client` sends it, which the SDK's own
  // createPty does over its create-connect WebSocket instead), then list, get, resize and kill.
  const toolboxApi = (
    sandbox.process as unknown as {
      apiClient: { createPtySession(request: { id: string; cols: number; rows: number }): Promise<unknown> };
    }
  ).apiClient;
  await toolboxApi.createPtySession({ id: "fidelity-pty", cols: 80, rows: 24 });
  await sandbox.process.listPtySessions();
  await sandbox.process.getPtySessionInfo("fidelity-pty");
  await sandbox.process.resizePtySession("fidelity-pty", 100, 30);
  await sandbox.process.killPtySession("fidelity-pty");
  await sandbox.process.getPtySessionInfo("fidelity-pty").catch(() => undefined);
  await fetch(`${sandbox.toolboxProxyUrl}/${sandbox.id}/version`, {
    headers: { Authorization: `Bearer ${API_KEY}` },
  });
  await sandbox.stop(600);
  await sandbox.archive();
  await sandbox.start(600);
  // Errors: a sandbox that does not exist, a session that does not exist, a wrong key.
  await daytona.get("no-such-sandbox").catch(() => undefined);
  await sandbox.process.getSession("no-such-session").catch(() => undefined);
  await new Daytona({ apiKey: "dtn_wrong", apiUrl, target: "us", useDeprecatedPolling: true })
    .get(sandbox.id)
    .catch(() => undefined);
  await sandbox.delete();
  await sandbox.delete().catch(() => undefined);
}

/**
 * Operations whose form body the generator dropped (the description declares it as a swagger-2 form the
 * OpenAPI 3 conversion loses), with the part names the SDK itself sends there: `FileSystem.uploadFiles`
 * appends `files[i].path` and `files[i].file` and hands the form to the generated `uploadFiles`.
 */
const DROPPED_FORMS: Readonly<Record<string, RegExp>> = { uploadFiles: /^files\[\d+\]\.(path|file)$/ };

/** Where an exchange went: the description it belongs to and its path inside that description. */
function locate(exchange: Exchange): { doc: "api" | "toolbox"; path: string; where: string } {
  const isToolbox = exchange.url.pathname.startsWith("/toolbox/");
  return {
    doc: isToolbox ? "toolbox" : "api",
    path: isToolbox
      ? exchange.url.pathname.replace(/^\/toolbox\/[^/]+/, "")
      : exchange.url.pathname.replace(/^\/api/, ""),
    where: `${exchange.method} ${exchange.url.pathname}${exchange.url.search} -> ${exchange.status}`,
  };
}

/** A query value that is not of the declared scalar type (arrays: of the items' type). */
function badQueryValue(schema: Json, value: string): string | undefined {
  const type = schema.type === "array" ? ((schema.items as Json | undefined)?.type ?? "string") : schema.type;
  const bad =
    (type === "integer" && !/^-?\d+$/.test(value)) ||
    (type === "number" && Number.isNaN(Number(value))) ||
    (type === "boolean" && value !== "true" && value !== "false");
  return bad ? `is not a ${String(type)}` : undefined;
}

/** Daytona's error shape `{ statusCode, message, error }`, which its descriptions do not declare. */
function badErrorBody(exchange: Exchange): boolean {
  try {
    const body = JSON.parse(exchange.responseBody.toString("utf8")) as Json;
    return (
      body.statusCode !== exchange.status ||
      typeof body.message !== "string" ||
      typeof body.error !== "string"
    );
  } catch {
    return true;
  }
}

/** Multipart part names of a body (`name="…"` of each part's Content-Disposition). */
function partNames(body: Buffer): string[] {
  return [...body.toString("latin1").matchAll(/; name="([^"]*)"/g)].map((m) => m[1]!);
}

/** The emulator's routes answered with success, as `api|toolbox METHOD template`. */
function servedRoutes(emulator: DaytonaEmulator): Set<string> {
  return new Set(
    emulator.log
      .filter((entry) => entry.route !== undefined && (entry.status ?? 500) < 400)
      .map((entry) =>
        entry.route!.startsWith("toolbox ") ? `toolbox ${entry.route!.slice(8)}` : `api ${entry.route!}`,
      ),
  );
}

/** Validators over the generated clients' model schemas, one registered document per client. */
function generatedValidator(clients: { api: GeneratedClient; toolbox: GeneratedClient }) {
  const ajv = new Ajv({ strict: false, allErrors: true });
  ajv.addKeyword({ keyword: "binary" });
  ajv.addKeyword({ keyword: "void" });
  for (const client of [clients.api, clients.toolbox]) {
    ajv.addSchema({ $id: `${client.doc}.json`, definitions: client.definitions });
  }
  const compiled = new Map<string, ValidateFunction>();
  return {
    ajv,
    validate(doc: string, schema: Json, value: unknown): string | undefined {
      const key = `${doc}:${JSON.stringify(schema)}`;
      let fn = compiled.get(key);
      if (!fn) {
        fn = ajv.compile(qualify(schema, `${doc}.json`) as Json);
        compiled.set(key, fn);
      }
      return fn(value) ? undefined : ajv.errorsText(fn.errors);
    },
  };
}

/**
 * Checks exchanges against the generated clients: the operation exists, query names are its own and of
 * its types, a JSON body validates against its body model, a form carries its fields, a success answer
 * validates against its answer model (a client that accepts JSON gets JSON), an error is Daytona's shape.
 */
function checkAgainstGenerated(
  exchanges: readonly Exchange[],
  clients: { api: GeneratedClient; toolbox: GeneratedClient },
): { mismatches: string[]; covered: Set<string> } {
  const { validate } = generatedValidator(clients);
  const mismatches: string[] = [];
  const covered = new Set<string>();
  for (const exchange of exchanges) {
    const { doc, path, where } = locate(exchange);
    const op: GeneratedOperation | undefined = clients[doc].operations.find(
      (o) => o.method === exchange.method && o.pattern.test(path),
    );
    if (!op) {
      mismatches.push(
        `${where}: no such operation in ${doc === "api" ? "@daytona/api-client" : "@daytona/toolbox-api-client"}`,
      );
      continue;
    }
    covered.add(`${doc} ${op.method} ${op.template}`);
    for (const [name, value] of exchange.url.searchParams) {
      const schema = op.query.get(name);
      if (!schema) {
        mismatches.push(`${where}: query parameter ${name} is not one of ${op.name}'s`);
        continue;
      }
      const bad = badQueryValue(schema, value);
      if (bad) mismatches.push(`${where}: query parameter ${name}=${value} ${bad}`);
    }
    const mediaType = exchange.requestType.split(";")[0]!.trim();
    if (exchange.requestBody.byteLength > 0) {
      if (op.body && mediaType === "application/json") {
        const error = validate(doc, op.body, JSON.parse(exchange.requestBody.toString("utf8")));
        if (error) mismatches.push(`${where}: request body (${op.name}): ${error}`);
      } else if (op.form && mediaType === "multipart/form-data") {
        const unknown = partNames(exchange.requestBody).filter((name) => !op.form!.includes(name));
        if (unknown.length > 0)
          mismatches.push(`${where}: form fields ${unknown.join(", ")} are not ${op.name}'s`);
      } else if (DROPPED_FORMS[op.name] && mediaType === "multipart/form-data") {
        const unknown = partNames(exchange.requestBody).filter((name) => !DROPPED_FORMS[op.name]!.test(name));
        if (unknown.length > 0)
          mismatches.push(`${where}: form fields ${unknown.join(", ")} are not the SDK's for ${op.name}`);
      } else {
        mismatches.push(`${where}: a ${mediaType || "typeless"} request body ${op.name} does not send`);
      }
    }
    if (exchange.status >= 400) {
      if (badErrorBody(exchange))
        mismatches.push(`${where}: error body is not Daytona's { statusCode, message, error }`);
      continue;
    }
    const answered = exchange.responseType.split(";")[0]!.trim();
    if (!op.response || op.response.binary === true) continue;
    if (answered === "multipart/form-data" && op.accept.includes(answered)) {
      // The generator types a multipart answer as a free-form map; `downloadFiles`' own comment says
      // "successful files are returned as multipart parts named `file`, failures as parts named `error`".
      const names = partNames(exchange.responseBody);
      if (names.length === 0 || names.some((name) => name !== "file" && name !== "error")) {
        mismatches.push(`${where}: multipart parts ${names.join(", ")}, ${op.name} expects file or error`);
      }
      continue;
    }
    if (answered !== "application/json") {
      // A client that also accepts text/plain (logs) may be answered with text when its model is a string.
      const textual = op.accept.includes("text/plain") && answered === "text/plain";
      if (!textual) mismatches.push(`${where}: answered ${answered || "nothing"}, ${op.name} expects JSON`);
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(exchange.responseBody.toString("utf8"));
    } catch {
      mismatches.push(`${where}: answered JSON that does not parse`);
      continue;
    }
    const error = validate(doc, op.response, value);
    if (error) mismatches.push(`${where}: response body (${op.name}): ${error}`);
  }
  return { mismatches, covered };
}

/** A recorded exchange with a JSON answer replaced. */
function withAnswer(exchange: Exchange, change: (body: Json) => void): Exchange {
  const body = JSON.parse(exchange.responseBody.toString("utf8")) as Json;
  change(body);
  return { ...exchange, responseBody: Buffer.from(JSON.stringify(body)) };
}

describe("Daytona emulator's exchanges with @daytonaio/sdk", () => {
  let emulator: DaytonaEmulator;
  let proxy: Server;
  const exchanges: Exchange[] = [];
  const clients = readGeneratedClients();

  beforeAll(async () => {
    proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", async () => {
        const requestBody = Buffer.concat(chunks);
        const target = new URL(req.url ?? "/", emulator.listenUrl);
        const headers = new Headers();
        for (const [name, value] of Object.entries(req.headers)) {
          if (typeof value === "string" && !HOP_BY_HOP.has(name)) headers.set(name, value);
        }
        try {
          const init: RequestInit = { method: req.method ?? "GET", headers };
          if (requestBody.byteLength > 0) init.body = requestBody;
          const answer = await fetch(target, init);
          const responseBody = Buffer.from(await answer.arrayBuffer());
          exchanges.push({
            method: req.method ?? "GET",
            url: new URL(req.url ?? "/", "http://proxy"),
            requestBody,
            requestType: req.headers["content-type"] ?? "",
            status: answer.status,
            responseType: answer.headers.get("content-type") ?? "",
            responseBody,
          });
          const type = answer.headers.get("content-type");
          res.writeHead(answer.status, type ? { "content-type": type } : {});
          res.end(responseBody);
        } catch (error) {
          res.writeHead(502).end(`${String(error)} (${String((error as { cause?: unknown }).cause)})`);
        }
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    emulator = await startDaytonaEmulator({
      apiKey: API_KEY,
      publicUrl: proxyUrl,
      ...(process.env.SBOX_EMULATOR_BACKEND === "docker" ? { backend: "docker" as const } : {}),
    });
    await runScenario(`${proxyUrl}/api`);
  }, 900_000);

  afterAll(async () => {
    await emulator?.close();
    await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()));
  });

  test(`every exchange matches @daytona/api-client and @daytona/toolbox-api-client ${clients.api.version} (offline)`, () => {
    const { mismatches, covered } = checkAgainstGenerated(exchanges, clients);
    const served = servedRoutes(emulator);
    console.info(
      `daytona fidelity (generated clients ${clients.api.version}): ${covered.size} operations covered (${served.size} emulator routes), ${exchanges.length} exchanges, ${mismatches.length} mismatches`,
    );
    for (const route of [...covered].sort()) console.info(`  covered: ${route}`);
    expect(mismatches).toEqual([]);
    expect([...served].filter((route) => !covered.has(route))).toEqual([]);
    expect(covered.size).toBeGreaterThan(20);
  });

  test("the generated-client check reports drifted bodies, unknown routes and query parameters", () => {
    const sandboxAnswer = exchanges.find(
      (e) => e.method === "GET" && /^\/api\/sandbox\/[^/]+$/.test(e.url.pathname) && e.status === 200,
    );
    const created = exchanges.find((e) => e.method === "POST" && e.url.pathname === "/api/sandbox");
    const sessionRun = exchanges.find(
      (e) => e.method === "POST" && /\/process\/session\/[^/]+\/exec$/.test(e.url.pathname),
    );
    const bulkDownload = exchanges.find(
      (e) =>
        e.url.pathname.endsWith("/files/bulk-download") &&
        e.status === 200 &&
        e.responseBody.includes('name="file"'),
    );
    expect(sandboxAnswer && created && sessionRun && bulkDownload).toBeTruthy();
    const mutations: Record<string, Exchange> = {
      "required field dropped": withAnswer(sandboxAnswer!, (b) => delete b.id),
      "number as string": withAnswer(sandboxAnswer!, (b) => (b.cpu = String(b.cpu))),
      "enum value Daytona lacks": withAnswer(sandboxAnswer!, (b) => (b.state = "sleeping")),
      "nested field of the wrong type": withAnswer(sessionRun!, (b) => (b.cmdId = 7)),
      "request body drifted": {
        ...created!,
        requestBody: Buffer.from(
          JSON.stringify({ ...JSON.parse(created!.requestBody.toString()), cpu: "two" }),
        ),
      },
      "undeclared query parameter": {
        ...sandboxAnswer!,
        url: new URL(`${sandboxAnswer!.url.href}?colour=red`),
      },
      "unknown route": { ...sandboxAnswer!, url: new URL("http://proxy/api/sandbox/x/teleport") },
      "multipart answer part renamed": {
        ...bulkDownload!,
        responseBody: Buffer.from(
          bulkDownload!.responseBody.toString("latin1").replaceAll('name="file"', 'name="blob"'),
          "latin1",
        ),
      },
      "error body not Daytona's": { ...sandboxAnswer!, status: 404, responseBody: Buffer.from("{}") },
    };
    for (const [name, exchange] of Object.entries(mutations)) {
      expect(checkAgainstGenerated([exchange], clients).mismatches, name).not.toEqual([]);
    }
    // The unmutated originals pass, so each report above is the mutation's.
    expect(
      checkAgainstGenerated([sandboxAnswer!, created!, sessionRun!, bulkDownload!], clients).mismatches,
    ).toEqual([]);
  });

  describe.skipIf(!CHECKOUT)(
    `against daytonaio/daytona ${DAYTONA_SPEC_TAG} OpenAPI (DAYTONA_CHECKOUT)`,
    () => {
      test("every exchange matches the description", () => {
        const ajv = new Ajv({ strict: false, allErrors: true });
        (addFormatsModule as unknown as (ajv: Ajv) => void)(ajv);
        const compiled = new Map<string, ValidateFunction>();
        const validator = (doc: string, schema: unknown): ValidateFunction => {
          const key = `${doc}:${JSON.stringify(schema)}`;
          let fn = compiled.get(key);
          if (!fn) {
            fn = ajv.compile(qualify(schema, `${doc}.json`) as Json);
            compiled.set(key, fn);
          }
          return fn;
        };
        const api = parseYaml(specText("libs/api-client-go/api/openapi.yaml")) as Json;
        const toolbox = parseYaml(specText("libs/toolbox-api-client-go/api/openapi.yaml")) as Json;
        const daemonSwagger = JSON.parse(specText("apps/daemon/pkg/toolbox/docs/swagger.json")) as Json;
        const consumesOf = (method: string, template: string): string[] => {
          const op = (
            (daemonSwagger.paths as Record<string, Json> | undefined)?.[template] as Json | undefined
          )?.[method.toLowerCase()] as Json | undefined;
          return (op?.consumes as string[] | undefined) ?? [];
        };
        ajv.addSchema({ $id: "api.json", components: api.components }, "api.json");
        ajv.addSchema({ $id: "toolbox.json", components: toolbox.components }, "toolbox.json");
        const operations = [...operationsOf("api", api), ...operationsOf("toolbox", toolbox)];
        const mismatches: string[] = [];
        const notes: string[] = [];
        const covered = new Set<string>();
        for (const exchange of exchanges) {
          const isToolbox = exchange.url.pathname.startsWith("/toolbox/");
          const path = isToolbox
            ? exchange.url.pathname.replace(/^\/toolbox\/[^/]+/, "")
            : exchange.url.pathname.replace(/^\/api/, "");
          const doc = isToolbox ? "toolbox" : "api";
          const where = `${exchange.method} ${exchange.url.pathname}${exchange.url.search} -> ${exchange.status}`;
          const op = operations.find(
            (o) => o.doc === doc && o.method === exchange.method && o.pattern.test(path),
          );
          if (!op) {
            mismatches.push(`${where}: no such operation in the ${doc} description`);
            continue;
          }
          covered.add(`${doc} ${op.method} ${op.template}`);
          const params = (op.spec.parameters as Json[] | undefined) ?? [];
          for (const [name, value] of exchange.url.searchParams) {
            const param = params.find((p) => p.in === "query" && p.name === name);
            if (!param) {
              mismatches.push(`${where}: query parameter ${name} is not declared`);
              continue;
            }
            const schema = (param.schema as Json | undefined) ?? {};
            const type =
              schema.type === "array" ? ((schema.items as Json | undefined)?.type ?? "string") : schema.type;
            const bad =
              (type === "integer" && !/^-?\d+$/.test(value)) ||
              (type === "number" && Number.isNaN(Number(value))) ||
              (type === "boolean" && value !== "true" && value !== "false");
            if (bad) mismatches.push(`${where}: query parameter ${name}=${value} is not a ${String(type)}`);
          }
          const requestContent =
            ((op.spec.requestBody as Json | undefined)?.content as Json | undefined) ?? {};
          const requestSchema = requestContent["application/json"] as Json | undefined;
          const mediaType = exchange.requestType.split(";")[0]!.trim();
          if (requestSchema?.schema && exchange.requestBody.byteLength > 0) {
            const validate = validator(doc, requestSchema.schema);
            if (!validate(JSON.parse(exchange.requestBody.toString("utf8")))) {
              mismatches.push(`${where}: request body: ${ajv.errorsText(validate.errors)}`);
            }
          } else if (exchange.requestBody.byteLength > 0) {
            // The generated OpenAPI 3 document drops a form body; the daemon's own swagger 2 document
            // (apps/daemon/pkg/toolbox/docs/swagger.json) declares what the route consumes.
            const consumes = doc === "toolbox" ? consumesOf(op.method, op.template) : [];
            if (!consumes.includes(mediaType) && !(mediaType in requestContent)) {
              mismatches.push(`${where}: a ${mediaType} request body the description does not declare`);
            }
          }
          const responses = (op.spec.responses as Record<string, Json> | undefined) ?? {};
          const declared = responses[String(exchange.status)];
          if (!declared) {
            if (exchange.status < 400) {
              mismatches.push(
                `${where}: status ${exchange.status} is not declared (${Object.keys(responses).join(", ")})`,
              );
              continue;
            }
            const body = JSON.parse(exchange.responseBody.toString("utf8")) as Json;
            if (
              body.statusCode !== exchange.status ||
              typeof body.message !== "string" ||
              typeof body.error !== "string"
            ) {
              mismatches.push(`${where}: error body is not Daytona's { statusCode, message, error }`);
            }
            notes.push(
              `${where}: error status not declared by the description (Daytona documents no error bodies)`,
            );
            continue;
          }
          const responseSchema = (
            (declared.content as Json | undefined)?.["application/json"] as Json | undefined
          )?.schema;
          if (responseSchema) {
            if (!exchange.responseType.includes("application/json")) {
              mismatches.push(
                `${where}: answered ${exchange.responseType}, the description says application/json`,
              );
              continue;
            }
            const validate = validator(doc, responseSchema);
            if (!validate(JSON.parse(exchange.responseBody.toString("utf8")))) {
              mismatches.push(`${where}: response body: ${ajv.errorsText(validate.errors)}`);
            }
          } else if (exchange.responseBody.byteLength > 0 && exchange.status !== 204) {
            const answered = exchange.responseType.split(";")[0]!.trim();
            const declaredTypes = Object.keys((declared.content as Json | undefined) ?? {});
            if (!declaredTypes.includes(answered)) {
              mismatches.push(
                `${where}: answered ${answered}, the description declares ${declaredTypes.join(", ") || "no body"}`,
              );
            } else if (answered === "multipart/form-data") {
              // The description: "successful files are parts named `file`, failures parts named `error`".
              const names = [...exchange.responseBody.toString("latin1").matchAll(/; name="([^"]*)"/g)].map(
                (m) => m[1],
              );
              if (names.length === 0 || names.some((name) => name !== "file" && name !== "error")) {
                mismatches.push(
                  `${where}: multipart parts ${names.join(", ")}, the description says file or error`,
                );
              }
            }
          }
        }
        const served = servedRoutes(emulator);
        console.info(
          `daytona fidelity (OpenAPI ${DAYTONA_SPEC_TAG}): ${covered.size} operations covered (${served.size} emulator routes), ${exchanges.length} exchanges, ${mismatches.length} mismatches`,
        );
        for (const note of notes) console.info(`  note: ${note}`);
        expect(mismatches).toEqual([]);
        expect([...served].filter((route) => !covered.has(route))).toEqual([]);
      });
    },
  );
});

if (!CHECKOUT) {
  console.warn(
    "daytona fidelity: the OpenAPI-checkout mode is skipped — set DAYTONA_CHECKOUT to a daytonaio/daytona checkout or mirror",
  );
}
