/**
 * The E2B control-plane routes the adapter uses, from the SDK's OpenAPI types: create (`POST /v2/sandboxes`),
 * list (`GET /v2/sandboxes` with metadata/state filters and `X-Next-Token` pages), get, kill, timeout,
 * pause, connect (resumes), metrics, network and fork. Every route wants `X-API-KEY` and answers 401 like
 * E2B without it; errors are `{ code, message }`.
 */

import { statfsSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { cpus, freemem, totalmem } from "node:os";
import { readBody } from "./e2b-test-connect-protocol.js";
import { TestSandbox } from "./e2b-test-sandbox.js";

/** Shared state of the test server the control plane works on. */
export interface ControlPlaneState {
  readonly apiKey: string;
  readonly templates: ReadonlySet<string>;
  readonly sandboxes: Map<string, TestSandbox>;
  /** Records a route as exercised. */
  hit(route: string): void;
  /** An injected failure for this route, if one is queued. */
  takeFailure(route: string): { status: number; message: string } | undefined;
}

/** E2B's default sandbox lifetime and connect extension, in seconds. */
const DEFAULT_TIMEOUT_S = 300;

/**
 * The machine's CPU use over a short window, in percent of all its cores. E2B reports the VM's; a test
 * sandbox's processes run on this machine, so its use stands for the VM's, as `memUsed` does.
 */
async function cpuUsedPct(windowMs = 250): Promise<number> {
  const times = () =>
    cpus().reduce(
      (sum, { times: t }) => ({
        idle: sum.idle + t.idle,
        all: sum.all + t.user + t.nice + t.sys + t.irq + t.idle,
      }),
      { idle: 0, all: 0 },
    );
  const before = times();
  await new Promise((resolve) => setTimeout(resolve, windowMs));
  const after = times();
  const all = after.all - before.all;
  return all <= 0 ? 0 : Math.round(1000 * (1 - (after.idle - before.idle) / all)) / 10;
}

function send(
  res: ServerResponse,
  status: number,
  body?: unknown,
  headers: Record<string, string> = {},
): void {
  if (body === undefined) {
    res.writeHead(status, headers);
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", ...headers });
  res.end(text);
}

function error(res: ServerResponse, status: number, message: string): void {
  send(res, status, { code: status, message });
}

async function json(req: IncomingMessage): Promise<Record<string, unknown>> {
  const body = await readBody(req);
  if (body.byteLength === 0) return {};
  return JSON.parse(body.toString("utf8")) as Record<string, unknown>;
}

function timeoutMs(value: unknown, fallbackSeconds: number): number {
  return (typeof value === "number" && value > 0 ? value : fallbackSeconds) * 1000;
}

/** The metadata filter as the SDK sends it: a query string whose keys and values are URL-encoded again. */
function parseMetadataQuery(raw: string | null): Record<string, string> {
  const out: Record<string, string> = {};
  if (!raw) return out;
  for (const [key, value] of new URLSearchParams(raw))
    out[decodeURIComponent(key)] = decodeURIComponent(value);
  return out;
}

/** Handles one control-plane request. */
export async function serveControlPlane(
  state: ControlPlaneState,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const method = req.method ?? "GET";
  const parts = url.pathname.split("/").filter(Boolean);
  const route =
    parts[0] === "v2" && parts[1] === "sandboxes"
      ? parts.length === 2
        ? `${method} /v2/sandboxes`
        : `${method} /v2/sandboxes/{id}/${parts[3] ?? ""}`
      : parts[0] === "sandboxes"
        ? `${method} /sandboxes/{id}${parts[2] ? `/${parts[2]}` : ""}`
        : `${method} ${url.pathname}`;
  state.hit(route);
  if (req.headers["x-api-key"] !== state.apiKey) {
    req.resume();
    return error(
      res,
      401,
      "Invalid API key, please visit https://e2b.dev/docs/api-key for more information.",
    );
  }
  const failure = state.takeFailure(route);
  if (failure) {
    req.resume();
    return error(res, failure.status, failure.message);
  }
  const id = parts[0] === "v2" ? parts[2] : parts[1];
  const sandbox = id ? state.sandboxes.get(id) : undefined;
  const missing = () => error(res, 404, `sandbox "${id}" doesn't exist or you don't have access to it`);

  switch (route) {
    case "POST /v2/sandboxes": {
      const body = await json(req);
      const template = String(body.templateID ?? "");
      if (!state.templates.has(template)) return error(res, 404, `template '${template}' not found`);
      const created = new TestSandbox(
        {
          templateID: template,
          envVars: (body.envVars ?? {}) as Record<string, string>,
          metadata: (body.metadata ?? {}) as Record<string, string>,
          timeoutMs: timeoutMs(body.timeout, DEFAULT_TIMEOUT_S),
          network: body.network as Record<string, unknown> | undefined,
        },
        (expired) => {
          state.sandboxes.delete(expired.id);
          expired.destroy();
        },
      );
      state.sandboxes.set(created.id, created);
      return send(res, 201, created.connection());
    }
    case "GET /v2/sandboxes": {
      const metadata = parseMetadataQuery(url.searchParams.get("metadata"));
      const states = (url.searchParams.get("state") ?? "running,paused").split(",");
      const limit = Number(url.searchParams.get("limit") ?? 100) || 100;
      const offset = Number(Buffer.from(url.searchParams.get("nextToken") ?? "", "base64").toString() || 0);
      const matching = [...state.sandboxes.values()]
        .filter((s) => states.includes(s.state))
        .filter((s) => Object.entries(metadata).every(([k, v]) => s.metadata[k] === v))
        .sort((a, b) => b.startedAt.getTime() - a.startedAt.getTime());
      const page = matching.slice(offset, offset + limit);
      const headers: Record<string, string> = {};
      if (offset + limit < matching.length)
        headers["X-Next-Token"] = Buffer.from(String(offset + limit)).toString("base64");
      return send(
        res,
        200,
        page.map((s) => s.describe(false)),
        headers,
      );
    }
    case "GET /sandboxes/{id}":
      return sandbox ? send(res, 200, sandbox.describe(true)) : missing();
    case "DELETE /sandboxes/{id}":
      if (!sandbox) return missing();
      state.sandboxes.delete(sandbox.id);
      sandbox.destroy();
      return send(res, 204);
    case "POST /sandboxes/{id}/timeout": {
      const body = await json(req);
      if (!sandbox) return missing();
      if (typeof body.timeout !== "number" || body.timeout < 0) return error(res, 400, "invalid timeout");
      sandbox.setTimeout(body.timeout * 1000);
      return send(res, 204);
    }
    case "POST /sandboxes/{id}/pause": {
      const body = await json(req);
      if (!sandbox) return missing();
      if (sandbox.state === "paused") return error(res, 409, `sandbox "${sandbox.id}" is already paused`);
      sandbox.pause(body.memory !== false);
      return send(res, 204);
    }
    case "POST /v2/sandboxes/{id}/connect": {
      const body = await json(req);
      if (!sandbox) return missing();
      const ms = timeoutMs(body.timeout, DEFAULT_TIMEOUT_S);
      if (sandbox.state === "paused") {
        sandbox.resume(ms);
        return send(res, 201, sandbox.connection());
      }
      // Connecting only ever extends the timeout.
      if (Date.now() + ms > sandbox.endAt.getTime()) sandbox.setTimeout(ms);
      return send(res, 200, sandbox.connection());
    }
    case "GET /sandboxes/{id}/metrics": {
      if (!sandbox) return missing();
      const disk = statfsSync(sandbox.home);
      const cpuPercent = await cpuUsedPct();
      const now = new Date();
      return send(res, 200, [
        {
          timestamp: now.toISOString(),
          timestampUnix: Math.floor(now.getTime() / 1000),
          cpuCount: cpus().length,
          cpuUsedPct: cpuPercent,
          memUsed: totalmem() - freemem(),
          memTotal: totalmem(),
          memCache: 0,
          diskUsed: (disk.blocks - disk.bfree) * disk.bsize,
          diskTotal: disk.blocks * disk.bsize,
        },
      ]);
    }
    case "PUT /sandboxes/{id}/network": {
      const body = await json(req);
      if (!sandbox) return missing();
      sandbox.network = body;
      return send(res, 204);
    }
    case "POST /sandboxes/{id}/fork": {
      const body = await json(req);
      if (!sandbox) return missing();
      const count = typeof body.count === "number" ? body.count : 1;
      const results: Record<string, unknown>[] = [];
      for (let i = 0; i < count; i++) {
        const fork = new TestSandbox(
          {
            templateID: sandbox.templateID,
            envVars: sandbox.envVars,
            metadata: sandbox.metadata,
            timeoutMs: timeoutMs(body.timeout, 15),
            network: sandbox.network,
            copyFrom: sandbox.home,
          },
          (expired) => {
            state.sandboxes.delete(expired.id);
            expired.destroy();
          },
        );
        state.sandboxes.set(fork.id, fork);
        results.push({ sandbox: fork.connection() });
      }
      return send(res, 201, results);
    }
    default:
      req.resume();
      return error(res, 404, `no route ${method} ${url.pathname}`);
  }
}
