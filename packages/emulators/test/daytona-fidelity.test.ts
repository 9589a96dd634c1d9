/**
 * Fidelity of the Daytona emulator against Daytona's own API descriptions: the OpenAPI documents of the
 * control plane (`libs/api-client-go/api/openapi.yaml`) and of the toolbox
 * (`libs/toolbox-api-client-go/api/openapi.yaml`) in the public daytonaio/daytona repository, read at tag
 * `DAYTONA_SPEC_TAG` of a checkout the developer brought (`fetch github:daytonaio/daytona`; a work tree or
 * a bare mirror). Nothing of it is committed here: without `DAYTONA_CHECKOUT` this suite is skipped, and
 * says so.
 *
 * The unmodified `@daytonaio/sdk` runs a scenario that reaches every route the emulator serves, through a
 * recording proxy (the emulator advertises the proxy as its public URL, so toolbox calls go through it
 * too). Every exchange is then checked against the description: the route and method exist, the query
 * parameters are declared ones of the declared types, the request body validates against the declared
 * schema, the status is a declared one and the answer validates against its schema. Error answers
 * (statuses the description does not declare: Daytona documents no error bodies) are checked for Daytona's
 * error shape instead. The summary (routes covered, exchanges, mismatches) is printed.
 *
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

const describeFidelity = describe.skipIf(!CHECKOUT);
if (!CHECKOUT) {
  console.warn("daytona fidelity: skipped — set DAYTONA_CHECKOUT to a daytonaio/daytona checkout or mirror");
}

describeFidelity(
  `Daytona emulator against daytonaio/daytona ${DAYTONA_SPEC_TAG} OpenAPI (DAYTONA_CHECKOUT)`,
  () => {
    let emulator: DaytonaEmulator;
    let proxy: Server;
    const exchanges: Exchange[] = [];
    let operations: Operation[] = [];
    const ajv = new Ajv({ strict: false, allErrors: true });
    (addFormatsModule as unknown as (ajv: Ajv) => void)(ajv);
    const compiled = new Map<string, ValidateFunction>();
    let daemonSwagger: Json = {};
    const consumesOf = (method: string, template: string): string[] => {
      const op = (
        (daemonSwagger.paths as Record<string, Json> | undefined)?.[template] as Json | undefined
      )?.[method.toLowerCase()] as Json | undefined;
      return (op?.consumes as string[] | undefined) ?? [];
    };
    const validator = (doc: string, schema: unknown): ValidateFunction => {
      const key = `${doc}:${JSON.stringify(schema)}`;
      let fn = compiled.get(key);
      if (!fn) {
        fn = ajv.compile(qualify(schema, `${doc}.json`) as Json);
        compiled.set(key, fn);
      }
      return fn;
    };

    beforeAll(async () => {
      const api = parseYaml(specText("libs/api-client-go/api/openapi.yaml")) as Json;
      const toolbox = parseYaml(specText("libs/toolbox-api-client-go/api/openapi.yaml")) as Json;
      daemonSwagger = JSON.parse(specText("apps/daemon/pkg/toolbox/docs/swagger.json")) as Json;
      ajv.addSchema({ $id: "api.json", components: api.components }, "api.json");
      ajv.addSchema({ $id: "toolbox.json", components: toolbox.components }, "toolbox.json");
      operations = [...operationsOf("api", api), ...operationsOf("toolbox", toolbox)];

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
    });

    afterAll(async () => {
      await emulator?.close();
      await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()));
    });

    test("every exchange of an SDK scenario covering every served route matches the description", {
      timeout: 900_000,
    }, async () => {
      const apiUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/api`;
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
        const requestContent = ((op.spec.requestBody as Json | undefined)?.content as Json | undefined) ?? {};
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
      // Every route the emulator answered with success is one of the description's operations, seen here.
      const served = new Set(
        emulator.log
          .filter((entry) => entry.route !== undefined && (entry.status ?? 500) < 400)
          .map((entry) => (entry.route!.startsWith("toolbox ") ? entry.route!.slice(8) : entry.route!))
          .map(
            (route) =>
              `${emulator.log.some((e) => e.route === `toolbox ${route}`) ? "toolbox" : "api"} ${route}`,
          ),
      );
      console.info(
        `daytona fidelity: ${covered.size} operations covered (${served.size} emulator routes), ${exchanges.length} exchanges, ${mismatches.length} mismatches`,
      );
      for (const route of [...covered].sort()) console.info(`  covered: ${route}`);
      for (const note of notes) console.info(`  note: ${note}`);
      expect(mismatches).toEqual([]);
      expect([...served].filter((route) => !covered.has(route))).toEqual([]);
    });
  },
);
