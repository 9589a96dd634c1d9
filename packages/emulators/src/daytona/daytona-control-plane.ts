/**
 * The Daytona control-plane routes `@daytonaio/sdk` calls (the `sandbox` tag of Daytona's API description,
 * served under `/api`): create, list (labels, states, cursor/limit), get, delete, start, stop, archive, the
 * auto-stop / auto-archive / auto-delete / ttl intervals, labels, the toolbox proxy URL, and preview URLs
 * (plain and signed). Bodies are the description's `Sandbox`, `ListSandboxesResponse`, `SandboxLabels`,
 * `ToolboxProxyUrl`, `PortPreviewUrl` and `SignedPortPreviewUrl`; errors are Daytona's
 * `{ statusCode, message, error }`.
 */

import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { readJsonObject, sendJsonResponse } from "../http-server.js";
import {
  DaytonaApiError,
  type DaytonaCreateInput,
  type DaytonaFleet,
  type DaytonaSandboxRecord,
} from "./daytona-fleet.js";
import type { DaytonaSignedPreviews } from "./daytona-preview.js";

/** What the routes need. */
export interface DaytonaControlPlaneContext {
  readonly fleet: DaytonaFleet;
  readonly apiKey: string;
  /** The organization every sandbox belongs to. */
  readonly organizationId: string;
  /** The region (`target`) sandboxes run in. */
  readonly target: string;
  /** Base of the toolbox routes: the SDK calls `<toolboxProxyUrl>/<sandbox id>/...`. */
  readonly toolboxProxyUrl: string;
  /** The preview URL of a sandbox port (`id` a sandbox id, or a signed token). */
  previewUrl(id: string, port: number): string;
  /** Signed preview tokens. */
  readonly signed: DaytonaSignedPreviews;
}

const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  404: "Not Found",
  409: "Conflict",
  500: "Internal Server Error",
};

/** Daytona's error body (NestJS's): what the SDK reads `message` from. */
export function daytonaErrorBody(status: number, message: string): unknown {
  return { statusCode: status, message, error: STATUS_TEXT[status] ?? "Error" };
}

/** The `Sandbox` body of a sandbox. */
export function sandboxDto(
  context: DaytonaControlPlaneContext,
  record: DaytonaSandboxRecord,
): Record<string, unknown> {
  const dto: Record<string, unknown> = {
    id: record.id,
    organizationId: context.organizationId,
    name: record.name,
    user: record.user,
    env: record.env,
    labels: record.labels,
    public: record.public,
    networkBlockAll: false,
    target: context.target,
    cpu: record.cpu,
    gpu: record.gpu,
    memory: record.memory,
    disk: record.disk,
    state: record.state,
    desiredState:
      record.state === "destroyed" || record.state === "destroying"
        ? "destroyed"
        : record.state === "stopped" || record.state === "stopping"
          ? "stopped"
          : record.state === "archived" || record.state === "archiving"
            ? "archived"
            : "started",
    autoStopInterval: record.autoStopInterval,
    autoArchiveInterval: record.autoArchiveInterval,
    autoDeleteInterval: record.autoDeleteInterval,
    volumes: [],
    createdAt: record.createdAt.toISOString(),
    updatedAt: record.updatedAt.toISOString(),
    lastActivityAt: record.lastActivityAt.toISOString(),
    toolboxProxyUrl: context.toolboxProxyUrl,
  };
  if (record.snapshot !== undefined) dto.snapshot = record.snapshot;
  if (record.buildInfo !== undefined) {
    dto.buildInfo = {
      dockerfileContent: record.buildInfo.dockerfileContent,
      snapshotRef: record.buildInfo.snapshotRef,
      createdAt: record.buildInfo.createdAt.toISOString(),
      updatedAt: record.buildInfo.createdAt.toISOString(),
    };
  }
  if (record.errorReason !== undefined) dto.errorReason = record.errorReason;
  return dto;
}

function stringRecord(value: unknown, field: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value))
    throw new DaytonaApiError(400, `${field} must be an object`);
  const out: Record<string, string> = {};
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== "string") throw new DaytonaApiError(400, `${field}.${key} must be a string`);
    out[key] = entry;
  }
  return out;
}

function optionalInteger(body: Record<string, unknown>, field: string, min: number): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
    throw new DaytonaApiError(400, `${field} must be an integer of at least ${min}`);
  }
  return value;
}

function optionalString(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value === "")
    throw new DaytonaApiError(400, `${field} must be a non-empty string`);
  return value;
}

/**
 * The image of a `buildInfo` (`CreateBuildInfo`): the emulator builds only what `create({ image: "<ref>" })`
 * sends, a Dockerfile of one `FROM <ref>` line (`Image.base`); a richer Dockerfile or a build context
 * (`contextHashes`, uploaded to object storage first) is refused with 400.
 */
function buildOf(value: unknown): { image: string; dockerfileContent: string } | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object" || Array.isArray(value))
    throw new DaytonaApiError(400, "buildInfo must be an object");
  const info = value as Record<string, unknown>;
  if (typeof info.dockerfileContent !== "string" || info.dockerfileContent === "") {
    throw new DaytonaApiError(400, "buildInfo.dockerfileContent must be a non-empty string");
  }
  if (Array.isArray(info.contextHashes) && info.contextHashes.length > 0) {
    throw new DaytonaApiError(400, "build contexts (contextHashes) are not supported by this emulator");
  }
  const from = /^FROM (\S+)\n?$/.exec(info.dockerfileContent);
  if (!from) {
    throw new DaytonaApiError(
      400,
      'this emulator builds only a Dockerfile of one FROM line (create({ image: "<ref>" }))',
    );
  }
  return { image: from[1]!, dockerfileContent: info.dockerfileContent };
}

/** Checks a `CreateSandbox` body. */
export function createInput(body: Record<string, unknown>): DaytonaCreateInput {
  const build = buildOf(body.buildInfo);
  if (build && body.snapshot !== undefined && body.snapshot !== null) {
    throw new DaytonaApiError(400, "Cannot specify a snapshot when using a build info entry");
  }
  // Daytona sizes a snapshot's sandbox by the snapshot (apps/api sandbox.controller.ts createSandbox).
  if (!build && (body.cpu || body.gpu || body.memory || body.disk)) {
    throw new DaytonaApiError(400, "Cannot specify Sandbox resources when using a snapshot");
  }
  if (body.volumes !== undefined && Array.isArray(body.volumes) && body.volumes.length > 0) {
    throw new DaytonaApiError(400, "volumes are not supported by this emulator");
  }
  if (body.public !== undefined && typeof body.public !== "boolean")
    throw new DaytonaApiError(400, "public must be a boolean");
  return {
    name: optionalString(body, "name"),
    snapshot: optionalString(body, "snapshot"),
    image: build?.image,
    dockerfileContent: build?.dockerfileContent,
    user: optionalString(body, "user"),
    env: stringRecord(body.env, "env"),
    labels: stringRecord(body.labels, "labels"),
    public: body.public === true,
    cpu: optionalInteger(body, "cpu", 1),
    gpu: optionalInteger(body, "gpu", 0),
    memory: optionalInteger(body, "memory", 1),
    disk: optionalInteger(body, "disk", 1),
    autoStopInterval: optionalInteger(body, "autoStopInterval", 0),
    autoArchiveInterval: optionalInteger(body, "autoArchiveInterval", 0),
    autoDeleteInterval: optionalInteger(body, "autoDeleteInterval", -1),
    ttlMinutes: optionalInteger(body, "ttlMinutes", 0),
    raw: body,
  };
}

/** The list filters the SDK sends: `labels` (JSON), `states`, `id`, `name`, `limit`, `cursor`. */
function listSandboxes(context: DaytonaControlPlaneContext, url: URL): unknown {
  const params = url.searchParams;
  let labels: Record<string, string> = {};
  const labelsParam = params.get("labels");
  if (labelsParam !== null) {
    try {
      labels = stringRecord(JSON.parse(labelsParam) as unknown, "labels");
    } catch (error) {
      if (error instanceof DaytonaApiError) throw error;
      throw new DaytonaApiError(400, "labels must be a JSON object");
    }
  }
  const states = params
    .getAll("states")
    .flatMap((s) => s.split(","))
    .filter(Boolean);
  const limitParam = params.get("limit");
  const limit = limitParam === null ? 100 : Number(limitParam);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200)
    throw new DaytonaApiError(400, "limit must be an integer from 1 to 200");
  const cursorParam = params.get("cursor");
  const offset =
    cursorParam === null ? 0 : Number.parseInt(Buffer.from(cursorParam, "base64url").toString("utf8"), 10);
  if (!Number.isInteger(offset) || offset < 0) throw new DaytonaApiError(400, "invalid cursor");
  const id = params.get("id");
  const name = params.get("name");
  const matching = [...context.fleet.sandboxes.values()]
    .filter((record) => record.state !== "destroyed")
    .filter((record) => Object.entries(labels).every(([key, value]) => record.labels[key] === value))
    .filter((record) => states.length === 0 || states.includes(record.state))
    .filter((record) => id === null || record.id.startsWith(id))
    .filter((record) => name === null || record.name.startsWith(name))
    .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
  const page = matching.slice(offset, offset + limit);
  const next =
    offset + limit < matching.length ? Buffer.from(String(offset + limit)).toString("base64url") : null;
  return { items: page.map((record) => sandboxDto(context, record)), nextCursor: next };
}

function interval(value: string): number {
  const minutes = Number(value);
  if (!Number.isInteger(minutes))
    throw new DaytonaApiError(400, "interval must be an integer number of minutes");
  return minutes;
}

/** Answers one control-plane request (paths without the `/api` prefix). */
export async function serveDaytonaControlPlane(
  context: DaytonaControlPlaneContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  setRoute: (route: string) => void,
): Promise<void> {
  const method = req.method ?? "GET";
  const path = url.pathname.replace(/^\/api/, "").replace(/\/+$/, "") || "/";
  const send = (body: unknown, status = 200) => sendJsonResponse(res, status, body);
  try {
    if (req.headers.authorization !== `Bearer ${context.apiKey}`) {
      req.resume();
      setRoute(`${method} ${path}`);
      throw new DaytonaApiError(401, "Invalid API key");
    }
    if (path === "/sandbox") {
      if (method === "POST") {
        setRoute("POST /sandbox");
        const body = await readJsonObject(req);
        if (!body) throw new DaytonaApiError(400, "the body must be a JSON object");
        const record = await context.fleet.create(createInput(body));
        return send(sandboxDto(context, record));
      }
      if (method === "GET") {
        setRoute("GET /sandbox");
        return send(listSandboxes(context, url));
      }
    }
    const match = /^\/sandbox\/([^/]+)(?:\/(.+))?$/.exec(path);
    if (!match) {
      req.resume();
      setRoute(`${method} ${path}`);
      throw new DaytonaApiError(404, `Cannot ${method} ${path}`);
    }
    const idOrName = decodeURIComponent(match[1]!);
    const rest = match[2] ?? "";
    const route = (name: string) => setRoute(`${method} /sandbox/{sandboxIdOrName}${name ? `/${name}` : ""}`);
    if (rest === "" && method === "GET") {
      route("");
      return send(sandboxDto(context, context.fleet.find(idOrName)));
    }
    if (rest === "" && method === "DELETE") {
      route("");
      const record = context.fleet.find(idOrName);
      // Daytona answers at once (`destroying`); the SDK polls when it wants to see `destroyed`.
      context.fleet.delete(record).catch(() => undefined);
      return send(sandboxDto(context, record));
    }
    if (method === "POST" && (rest === "start" || rest === "stop" || rest === "archive")) {
      route(rest);
      req.resume();
      const record = context.fleet.find(idOrName);
      context.fleet[rest](record).catch(() => undefined);
      return send(sandboxDto(context, record));
    }
    const intervalMatch = /^(autostop|autoarchive|autodelete|ttl)\/(-?\d+)$/.exec(rest);
    if (method === "POST" && intervalMatch) {
      const kind = intervalMatch[1]!;
      setRoute(`POST /sandbox/{sandboxIdOrName}/${kind}/${kind === "ttl" ? "{ttlMinutes}" : "{interval}"}`);
      req.resume();
      const record = context.fleet.find(idOrName);
      const minutes = interval(intervalMatch[2]!);
      const fields = {
        autostop: "autoStopInterval",
        autoarchive: "autoArchiveInterval",
        autodelete: "autoDeleteInterval",
        ttl: "ttlMinutes",
      } as const;
      const field = fields[kind as keyof typeof fields];
      if (minutes < (field === "autoDeleteInterval" ? -1 : 0))
        throw new DaytonaApiError(400, "interval out of range");
      context.fleet.setInterval(record, field, minutes);
      return send(sandboxDto(context, record));
    }
    if (method === "PUT" && rest === "labels") {
      route("labels");
      const body = await readJsonObject(req);
      if (!body) throw new DaytonaApiError(400, "the body must be a JSON object");
      const record = context.fleet.find(idOrName);
      record.labels = stringRecord(body.labels, "labels");
      return send({ labels: record.labels });
    }
    if (method === "GET" && rest === "toolbox-proxy-url") {
      setRoute("GET /sandbox/{sandboxId}/toolbox-proxy-url");
      context.fleet.find(idOrName);
      return send({ url: context.toolboxProxyUrl });
    }
    const portMatch = /^ports\/(\d+)\/(preview-url|signed-preview-url)$/.exec(rest);
    if (method === "GET" && portMatch) {
      route(`ports/{port}/${portMatch[2]}`);
      const record = context.fleet.find(idOrName);
      const port = Number(portMatch[1]);
      if (port < 1 || port > 65535) throw new DaytonaApiError(400, "port must be from 1 to 65535");
      let token = record.previewTokens.get(port);
      if (!token) {
        token = randomBytes(16).toString("hex");
        record.previewTokens.set(port, token);
      }
      if (portMatch[2] === "preview-url") {
        return send({ sandboxId: record.id, url: context.previewUrl(record.id, port), token });
      }
      // A signed URL is its own credential: a token of its own, in the place of the sandbox id.
      const signed = context.signed.mint(record.id, port, url.searchParams.get("expiresInSeconds"));
      return send({ sandboxId: record.id, port, token: signed, url: context.previewUrl(signed, port) });
    }
    req.resume();
    route(rest);
    throw new DaytonaApiError(404, `Cannot ${method} ${path}`);
  } catch (error) {
    if (error instanceof DaytonaApiError) {
      return send(daytonaErrorBody(error.status, error.message), error.status);
    }
    throw error;
  }
}
