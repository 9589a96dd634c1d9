/**
 * E2B's control plane (spec/openapi.yml of e2b-dev/E2B), the routes the SDK calls: create (`POST
 * /sandboxes`, `POST /v2/sandboxes`), list (`GET /v2/sandboxes` with metadata, state, template, startedAfter
 * and order filters and `X-Next-Token` pages; the older `GET /sandboxes`), get, kill, timeout, refreshes,
 * pause, resume, connect (`/sandboxes/{id}/connect` and `/v2/...`, which resumes a paused sandbox),
 * metrics (one sandbox with `start`/`end`, or several), network, fork, snapshots (create, list, delete
 * through `DELETE /templates/{id}`), templates (list, by alias) and logs. Every route wants `X-API-KEY`;
 * errors are `{ code, message }`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { readJsonObject, sendJsonResponse } from "../http-server.js";
import type { E2BEmulatorState } from "./e2b-state.js";
import { E2BTemplates } from "./e2b-templates.js";

/** E2B's default sandbox lifetime in seconds (what the SDK sends when no timeout is given). */
export const DEFAULT_TIMEOUT_S: number = 300;
/** The longest timeout E2B allows (Pro tier: 24 hours). */
export const MAX_TIMEOUT_S: number = 24 * 60 * 60;

function error(res: ServerResponse, status: number, message: string): void {
  sendJsonResponse(res, status, { code: status, message });
}

function notFound(res: ServerResponse, id: string): void {
  error(res, 404, `sandbox "${id}" doesn't exist or you don't have access to it`);
}

/** The metadata filter as the SDK sends it: a query string whose keys and values are URL-encoded again. */
function parseMetadataQuery(raw: string | null): Record<string, string> {
  const out: Record<string, string> = {};
  if (!raw) return out;
  for (const [key, value] of new URLSearchParams(raw)) {
    out[decodeURIComponent(key)] = decodeURIComponent(value);
  }
  return out;
}

/** A query list given as `a,b` or as repeated parameters. */
function queryList(url: URL, name: string): string[] | undefined {
  const values = url.searchParams.getAll(name);
  if (values.length === 0) return undefined;
  return values.flatMap((value) => value.split(",")).filter((value) => value !== "");
}

function timeoutSeconds(value: unknown, fallback: number): number | string {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    return "timeout must be a non-negative integer number of seconds";
  }
  if (value > MAX_TIMEOUT_S) return `Timeout cannot be greater than ${MAX_TIMEOUT_S / 3600} hours`;
  return value;
}

function pageToken(offset: number): string {
  return Buffer.from(String(offset)).toString("base64url");
}

function pageOffset(token: string | null): number | undefined {
  if (!token) return 0;
  const offset = Number(Buffer.from(token, "base64url").toString("utf8"));
  return Number.isInteger(offset) && offset >= 0 ? offset : undefined;
}

function page<T>(res: ServerResponse, url: URL, items: T[], map: (item: T) => unknown, maxLimit = 100): void {
  const limitRaw = url.searchParams.get("limit");
  const limit = limitRaw === null ? maxLimit : Number(limitRaw);
  if (!Number.isInteger(limit) || limit < 1 || limit > maxLimit) {
    error(res, 400, `limit must be an integer from 1 to ${maxLimit}`);
    return;
  }
  const offset = pageOffset(url.searchParams.get("nextToken"));
  if (offset === undefined) {
    error(res, 400, "invalid nextToken");
    return;
  }
  const slice = items.slice(offset, offset + limit);
  const headers: Record<string, string> = {};
  if (offset + limit < items.length) headers["X-Next-Token"] = pageToken(offset + limit);
  sendJsonResponse(res, 200, slice.map(map), headers);
}

/** Names a control-plane request's route (`POST /v2/sandboxes/{id}/connect`). */
export function controlPlaneRoute(method: string, path: string): { route: string; id: string | undefined } {
  const parts = path
    .split("/")
    .filter(Boolean)
    .map((part) => {
      try {
        return decodeURIComponent(part);
      } catch {
        return part;
      }
    });
  const versioned = parts[0] === "v2" || parts[0] === "v3";
  const rest = versioned ? parts.slice(1) : parts;
  const prefix = versioned ? `/${parts[0]}` : "";
  if (rest[0] === "sandboxes" && rest.length >= 2 && rest[1] !== "metrics") {
    const tail = rest.slice(2).join("/");
    return { route: `${method} ${prefix}/sandboxes/{id}${tail ? `/${tail}` : ""}`, id: rest[1] };
  }
  if (rest[0] === "templates" && rest.length >= 2 && rest[1] !== "aliases" && rest[1] !== "tags") {
    const tail = rest.slice(2).join("/");
    return { route: `${method} ${prefix}/templates/{id}${tail ? `/${tail}` : ""}`, id: rest[1] };
  }
  if (rest[0] === "templates" && rest[1] === "aliases" && rest[2]) {
    return { route: `${method} /templates/aliases/{alias}`, id: rest[2] };
  }
  return { route: `${method} ${path}`, id: undefined };
}

/** Handles one control-plane request. */
export async function serveControlPlane(
  state: E2BEmulatorState,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  setRoute: (route: string) => void,
): Promise<void> {
  const method = req.method ?? "GET";
  const { route, id } = controlPlaneRoute(method, url.pathname);
  setRoute(route);
  if (route === "GET /health") {
    req.resume();
    return sendJsonResponse(res, 200, { message: "Health check successful" });
  }
  const key = req.headers["x-api-key"];
  if (key !== state.apiKey) {
    req.resume();
    return error(
      res,
      401,
      "Invalid API key, please visit https://e2b.dev/docs/api-key for more information.",
    );
  }
  const body = method === "GET" || method === "DELETE" ? {} : await readJsonObject(req, 1024 * 1024);
  if (body === undefined) return error(res, 400, "request body must be a JSON object");
  const sandbox = id === undefined ? undefined : state.sandboxes.get(id);
  const domain = state.domain;

  switch (route) {
    case "POST /sandboxes":
    case "POST /v2/sandboxes": {
      const created = await state.createSandbox(body);
      if (typeof created === "object" && "status" in created)
        return error(res, created.status, created.message);
      return sendJsonResponse(res, 201, created.connection(domain));
    }
    case "GET /sandboxes":
    case "GET /v2/sandboxes": {
      const metadata = parseMetadataQuery(url.searchParams.get("metadata"));
      const states =
        queryList(url, "state") ?? (route === "GET /sandboxes" ? ["running"] : ["running", "paused"]);
      const unknownState = states.find((s) => s !== "running" && s !== "paused");
      if (unknownState) return error(res, 400, `invalid state ${JSON.stringify(unknownState)}`);
      const startedAfterRaw = url.searchParams.get("startedAfter");
      const startedAfter = startedAfterRaw ? Date.parse(startedAfterRaw) : undefined;
      if (startedAfter !== undefined && Number.isNaN(startedAfter)) {
        return error(res, 400, "startedAfter must be an RFC 3339 timestamp");
      }
      const templateRef = url.searchParams.get("template");
      const template = templateRef ? state.templates.resolve(templateRef) : undefined;
      const order = url.searchParams.get("order") ?? "desc";
      if (order !== "asc" && order !== "desc") return error(res, 400, 'order must be "asc" or "desc"');
      const matching = [...state.sandboxes.values()]
        .filter((s) => states.includes(s.state))
        .filter((s) => Object.entries(metadata).every(([k, v]) => s.metadata[k] === v))
        .filter((s) => startedAfter === undefined || s.startedAt.getTime() >= startedAfter)
        .filter((s) => !templateRef || (template !== undefined && s.templateID === template.templateID))
        .sort((a, b) =>
          order === "asc"
            ? a.startedAt.getTime() - b.startedAt.getTime()
            : b.startedAt.getTime() - a.startedAt.getTime(),
        );
      if (route === "GET /sandboxes") {
        return sendJsonResponse(
          res,
          200,
          matching.map((s) => s.describe(false, domain)),
        );
      }
      return page(res, url, matching, (s) => s.describe(false, domain));
    }
    case "GET /sandboxes/metrics": {
      const ids = queryList(url, "sandbox_ids") ?? [];
      if (ids.length === 0) return error(res, 400, "sandbox_ids is required");
      const out: Record<string, unknown> = {};
      for (const sandboxId of ids) {
        const found = state.sandboxes.get(sandboxId);
        if (found?.state === "running") out[sandboxId] = await state.sampleMetrics(found);
      }
      return sendJsonResponse(res, 200, { sandboxes: out });
    }
    case "GET /sandboxes/{id}":
      return sandbox ? sendJsonResponse(res, 200, sandbox.describe(true, domain)) : notFound(res, id!);
    case "DELETE /sandboxes/{id}":
      if (!sandbox) return notFound(res, id!);
      await state.killSandbox(sandbox);
      return sendJsonResponse(res, 204);
    case "POST /sandboxes/{id}/timeout": {
      if (!sandbox) return notFound(res, id!);
      if (body.timeout === undefined) return error(res, 400, "timeout is required");
      const seconds = timeoutSeconds(body.timeout, DEFAULT_TIMEOUT_S);
      if (typeof seconds === "string") return error(res, 400, seconds);
      if (sandbox.state === "running") sandbox.setTimeout(seconds * 1000);
      return sendJsonResponse(res, 204);
    }
    case "POST /sandboxes/{id}/refreshes": {
      if (!sandbox) return notFound(res, id!);
      const duration = body.duration ?? DEFAULT_TIMEOUT_S;
      if (typeof duration !== "number" || !Number.isInteger(duration) || duration < 0 || duration > 3600) {
        return error(res, 400, "duration must be an integer from 0 to 3600 seconds");
      }
      sandbox.extendTimeout(duration * 1000);
      return sendJsonResponse(res, 204);
    }
    case "POST /sandboxes/{id}/pause": {
      if (!sandbox) return notFound(res, id!);
      if (sandbox.state === "paused") return error(res, 409, `sandbox "${sandbox.id}" is already paused`);
      if (body.memory !== undefined && typeof body.memory !== "boolean") {
        return error(res, 400, "memory must be a boolean");
      }
      await sandbox.pause(body.memory !== false);
      return sendJsonResponse(res, 204);
    }
    case "POST /sandboxes/{id}/resume": {
      if (!sandbox) return notFound(res, id!);
      if (sandbox.state === "running") return error(res, 409, `sandbox "${sandbox.id}" is already running`);
      const seconds = timeoutSeconds(body.timeout, 15);
      if (typeof seconds === "string") return error(res, 400, seconds);
      await sandbox.resume(seconds * 1000);
      return sendJsonResponse(res, 201, sandbox.connection(domain));
    }
    case "POST /sandboxes/{id}/connect":
    case "POST /v2/sandboxes/{id}/connect": {
      if (!sandbox) return notFound(res, id!);
      const seconds = timeoutSeconds(body.timeout, DEFAULT_TIMEOUT_S);
      if (typeof seconds === "string") return error(res, 400, seconds);
      if (body.memory !== undefined && typeof body.memory !== "boolean") {
        return error(res, 400, "memory must be a boolean");
      }
      if (sandbox.state === "paused") {
        await sandbox.resume(seconds * 1000, body.memory === false);
        return sendJsonResponse(res, 201, sandbox.connection(domain));
      }
      sandbox.extendTimeout(seconds * 1000);
      return sendJsonResponse(res, 200, sandbox.connection(domain));
    }
    case "GET /sandboxes/{id}/metrics": {
      if (!sandbox) return notFound(res, id!);
      const start = url.searchParams.get("start");
      const end = url.searchParams.get("end");
      const startS = start === null ? undefined : Number(start);
      const endS = end === null ? undefined : Number(end);
      if (
        (startS !== undefined && !Number.isInteger(startS)) ||
        (endS !== undefined && !Number.isInteger(endS))
      ) {
        return error(res, 400, "start and end must be Unix timestamps in seconds");
      }
      if (sandbox.state === "running") await state.sampleMetrics(sandbox);
      const samples = sandbox.metrics.filter(
        (m) =>
          (startS === undefined || m.timestampUnix >= startS) &&
          (endS === undefined || m.timestampUnix <= endS),
      );
      return sendJsonResponse(res, 200, samples);
    }
    case "PUT /sandboxes/{id}/network": {
      if (!sandbox) return notFound(res, id!);
      const refused = await state.updateNetwork(sandbox, body);
      if (refused) return error(res, 400, refused);
      return sendJsonResponse(res, 204);
    }
    case "POST /sandboxes/{id}/fork": {
      if (!sandbox) return notFound(res, id!);
      const count = body.count ?? 1;
      if (typeof count !== "number" || !Number.isInteger(count) || count < 1 || count > 100) {
        return error(res, 400, "count must be an integer from 1 to 100");
      }
      const seconds = timeoutSeconds(body.timeout, 15);
      if (typeof seconds === "string") return error(res, 400, seconds);
      if (sandbox.state !== "running") return error(res, 409, `sandbox "${sandbox.id}" is not running`);
      const results = await state.forkSandbox(sandbox, count, seconds * 1000);
      return sendJsonResponse(
        res,
        201,
        results.map((result) =>
          "message" in result
            ? { error: { code: result.status, message: result.message } }
            : { sandbox: result.connection(domain) },
        ),
      );
    }
    case "POST /sandboxes/{id}/snapshots": {
      if (!sandbox) return notFound(res, id!);
      if (
        body.name !== undefined &&
        (typeof body.name !== "string" || !/^[a-z0-9][a-z0-9._-]*$/i.test(body.name))
      ) {
        return error(res, 400, "name must be letters, digits, '.', '_' and '-'");
      }
      const snapshot = await state.snapshotSandbox(sandbox, body.name as string | undefined);
      if ("message" in snapshot) return error(res, snapshot.status, snapshot.message);
      return sendJsonResponse(res, 201, {
        snapshotID: E2BTemplates.snapshotIdOf(snapshot),
        names: snapshot.names,
      });
    }
    case "GET /snapshots": {
      const sandboxID = url.searchParams.get("sandboxID");
      const name = url.searchParams.get("name");
      const snapshots = state.templates
        .all()
        .filter((t) => t.snapshot)
        .filter((t) => !sandboxID || t.sourceSandboxID === sandboxID)
        .filter(
          (t) =>
            !name || t.aliases.includes(name) || t.names.some((n) => n === name || n.startsWith(`${name}:`)),
        )
        .reverse();
      return page(res, url, snapshots, (t) => ({ snapshotID: E2BTemplates.snapshotIdOf(t), names: t.names }));
    }
    case "DELETE /templates/{id}": {
      const removed = await state.deleteTemplate(id!);
      if (removed === undefined) return error(res, 404, `template '${id}' not found`);
      if (typeof removed === "string") return error(res, 400, removed);
      return sendJsonResponse(res, 204);
    }
    case "GET /templates":
    case "GET /v2/templates":
      return sendJsonResponse(
        res,
        200,
        state.templates.all().map((t) => state.describeTemplate(t)),
      );
    case "GET /templates/{id}": {
      const template = state.templates.resolve(id!);
      if (!template) return error(res, 404, `template '${id}' not found`);
      return sendJsonResponse(res, 200, state.describeTemplate(template));
    }
    case "GET /templates/aliases/{alias}": {
      const template = state.templates.resolve(id!);
      if (!template) return error(res, 404, `template alias '${id}' not found`);
      return sendJsonResponse(res, 200, { templateID: template.templateID, public: false });
    }
    case "GET /sandboxes/{id}/logs":
    case "GET /v2/sandboxes/{id}/logs":
      if (!sandbox) return notFound(res, id!);
      // envd's own logs are not emulated; an empty answer is what a quiet sandbox gives.
      return sendJsonResponse(
        res,
        200,
        route.startsWith("GET /v2") ? { logs: [] } : { logs: [], logEntries: [] },
      );
    case "GET /teams":
      return sendJsonResponse(res, 200, [
        { teamID: "emulator-team", name: "emulator", apiKey: "", isDefault: true },
      ]);
    default:
      return error(
        res,
        404,
        `no route ${method} ${url.pathname} in this emulator (E2B has routes this emulator does not implement: template builds, volumes, secrets, teams administration)`,
      );
  }
}
