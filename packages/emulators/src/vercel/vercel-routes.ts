/**
 * The REST routes `@vercel/sandbox` calls (read off its `APIClient`), under the API base
 * (`https://vercel.com/api`): sandboxes by name (`/v2/sandboxes`, `/v3/sandboxes` for image-based create,
 * `/v2/sandboxes/:name` get/resume/update/delete, `/:name/fork`), sessions (`/v2/sandboxes/sessions/:id`:
 * commands, logs, kill, fs mkdir/read/write, stop, extend-timeout, network-policy, snapshot) and snapshots
 * (`/v2/sandboxes/snapshots`). Every call carries `Authorization: Bearer` and `?teamId=`; errors are
 * `{ "error": { "code", "message" } }` with the service's statuses (400 validation, 401/403 auth, 404
 * unknown, 409 name taken, 410 stopped session or gone snapshot).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { posix } from "node:path";
import { SandboxError } from "@sbox/core/spec";
import type { VercelAuth } from "./vercel-auth.js";
import { signalName, VercelCommand } from "./vercel-commands.js";
import type { VercelDisk } from "./vercel-disk.js";
import {
  apiError,
  type BootSource,
  type VercelAnswer,
  VercelApiError,
  VercelFleet,
  type VercelSandboxConfig,
  type VercelSession,
} from "./vercel-fleet.js";
import {
  MANAGED_IMAGES,
  MAX_PORTS,
  PLAN_MAX_TIMEOUT_MS,
  RUNTIMES,
  VCPU_RANGE,
  type VercelPlan,
} from "./vercel-limits.js";
import { NetworkPolicyError, parseNetworkPolicy } from "./vercel-network.js";
import { readTarGz, TarFormatError } from "./vercel-tar.js";
import { chownToUser, runAsUser } from "./vercel-user.js";

/** What the routes need. */
export interface VercelRouteContext {
  readonly fleet: VercelFleet;
  readonly auth: VercelAuth;
  readonly plan: VercelPlan;
  /** Largest request body taken (fs/write tarballs included). */
  readonly maxBodyBytes: number;
}

type Json = Record<string, unknown>;

function send(res: ServerResponse, answer: VercelAnswer): void {
  const text = JSON.stringify(answer.body);
  res.writeHead(answer.status, { "Content-Type": "application/json; charset=utf-8" });
  res.end(text);
}

function bad(message: string): never {
  throw new VercelApiError(apiError(400, "bad_request", message));
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).byteLength;
    if (size > limit) {
      throw new VercelApiError(apiError(413, "payload_too_large", `the request body exceeds ${limit} bytes`));
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

async function readJson(req: IncomingMessage, limit: number): Promise<Json> {
  const raw = (await readBody(req, limit)).toString("utf8");
  if (raw.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    bad("the request body is not valid JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    bad("the request body must be a JSON object");
  return parsed as Json;
}

function stringRecord(value: unknown, field: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) bad(`${field} must be an object of strings`);
  for (const [key, entry] of Object.entries(value as Json)) {
    if (typeof entry !== "string") bad(`${field}.${key} must be a string`);
  }
  return { ...(value as Record<string, string>) };
}

function positiveInteger(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0)
    bad(`${field} must be a positive integer`);
  return value;
}

function checkTimeout(ctx: VercelRouteContext, value: unknown, field = "timeout"): number | undefined {
  const timeout = positiveInteger(value, field);
  if (timeout !== undefined && timeout > PLAN_MAX_TIMEOUT_MS[ctx.plan]) {
    throw new VercelApiError(
      apiError(
        400,
        "sandbox_timeout_invalid",
        `${field} must be at most ${PLAN_MAX_TIMEOUT_MS[ctx.plan]} ms on the ${ctx.plan} plan`,
      ),
    );
  }
  return timeout;
}

function checkPorts(value: unknown): number[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || !value.every((p) => Number.isInteger(p) && p >= 1 && p <= 65535)) {
    bad("ports must be an array of port numbers (1-65535)");
  }
  if (new Set(value).size > MAX_PORTS) bad(`at most ${MAX_PORTS} ports can be exposed`);
  return [...new Set(value as number[])];
}

function checkVcpus(resources: unknown): number | undefined {
  if (resources === undefined || resources === null) return undefined;
  if (typeof resources !== "object") bad("resources must be an object");
  const vcpus = (resources as Json).vcpus;
  if (vcpus === undefined) return undefined;
  if (
    typeof vcpus !== "number" ||
    !Number.isInteger(vcpus) ||
    vcpus < VCPU_RANGE.min ||
    vcpus > VCPU_RANGE.max
  ) {
    bad(`resources.vcpus must be an integer from ${VCPU_RANGE.min} to ${VCPU_RANGE.max}`);
  }
  return vcpus;
}

function snapshotSettings(body: Json, config: VercelSandboxConfig): void {
  if (body.snapshotExpiration !== undefined && body.snapshotExpiration !== null) {
    const value = body.snapshotExpiration;
    if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
      bad("snapshotExpiration must be a non-negative integer of milliseconds");
    }
    config.snapshotExpiration = value;
  }
  if (body.keepLastSnapshots === null) config.keepLastSnapshots = undefined;
  else if (body.keepLastSnapshots !== undefined) {
    const keep = body.keepLastSnapshots as Json;
    const count = positiveInteger(keep.count, "keepLastSnapshots.count");
    if (count === undefined) bad("keepLastSnapshots.count is required");
    const expiration = keep.expiration;
    if (expiration !== undefined && (typeof expiration !== "number" || expiration < 0)) {
      bad("keepLastSnapshots.expiration must be a non-negative number");
    }
    config.keepLastSnapshots = {
      count,
      ...(expiration === undefined ? {} : { expiration: expiration as number }),
      deleteEvicted: keep.deleteEvicted === undefined ? true : keep.deleteEvicted === true,
    };
  }
}

function checkName(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || !/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/.test(value)) {
    bad("name must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit");
  }
  return value;
}

function policyOf(value: unknown) {
  try {
    return parseNetworkPolicy(value);
  } catch (error) {
    if (error instanceof NetworkPolicyError) bad(error.message);
    throw error;
  }
}

function sourceOf(value: unknown): { source?: BootSource; snapshotId?: string } {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object") bad("source must be an object");
  const source = value as Json;
  if (source.type === "snapshot") {
    if (typeof source.snapshotId !== "string" || source.snapshotId === "")
      bad("source.snapshotId is required");
    return { snapshotId: source.snapshotId };
  }
  if (source.type === "git") {
    if (typeof source.url !== "string" || !/^(https?|git|ssh|file):/.test(source.url))
      bad("source.url must be a git URL");
    let url = source.url;
    if (typeof source.username === "string" && typeof source.password === "string") {
      const parsed = new URL(url);
      parsed.username = source.username;
      parsed.password = source.password;
      url = parsed.toString();
    }
    const depth = positiveInteger(source.depth, "source.depth");
    const revision = typeof source.revision === "string" ? source.revision : undefined;
    return { source: { type: "git", url, depth, revision } };
  }
  if (source.type === "tarball") {
    if (typeof source.url !== "string" || !/^https?:/.test(source.url))
      bad("source.url must be an http(s) URL");
    return { source: { type: "tarball", url: source.url } };
  }
  bad('source.type must be "git", "tarball" or "snapshot"');
}

function checkProject(ctx: VercelRouteContext, projectId: unknown): void {
  if (projectId === undefined || projectId === null) return;
  if (projectId !== ctx.auth.scope.projectId) {
    throw new VercelApiError(apiError(404, "project_not_found", "Project not found"));
  }
}

function sandboxAnswer(ctx: VercelRouteContext, name: string, resumed?: boolean): VercelAnswer {
  const record = ctx.fleet.sandboxes.get(name)!;
  return {
    status: 200,
    body: {
      sandbox: ctx.fleet.sandboxJSON(record),
      session: record.session.toJSON(),
      routes: ctx.fleet.routesOf(record),
      ...(resumed === undefined ? {} : { resumed }),
    },
  };
}

function recordOf(ctx: VercelRouteContext, name: string) {
  const record = ctx.fleet.sandboxes.get(name);
  if (!record) throw new VercelApiError(apiError(404, "sandbox_not_found", `Sandbox not found: ${name}`));
  return record;
}

/** A session that is there and running; a stopped one is 410, as the SDK expects to resume on. */
function runningSession(ctx: VercelRouteContext, id: string): VercelSession {
  const session = ctx.fleet.sessions.get(id);
  if (!session)
    throw new VercelApiError(apiError(404, "sandbox_not_found", `Sandbox session not found: ${id}`));
  if (session.status === "stopping")
    throw new VercelApiError(apiError(422, "sandbox_stopping", "The sandbox is stopping"));
  if (session.status === "snapshotting")
    throw new VercelApiError(apiError(422, "sandbox_snapshotting", "The sandbox is being snapshotted"));
  if (session.status !== "running" || !session.machine) {
    throw new VercelApiError(apiError(410, "sandbox_stopped", "The sandbox is stopped"));
  }
  return session;
}

async function createSandbox(
  ctx: VercelRouteContext,
  body: Json,
  imageRoute: boolean,
): Promise<VercelAnswer> {
  checkProject(ctx, body.projectId);
  const config: VercelSandboxConfig = VercelFleet.defaults();
  const name = checkName(body.name) ?? `sbx-${Math.random().toString(36).slice(2, 12)}`;
  const timeout = checkTimeout(ctx, body.timeout);
  if (timeout !== undefined) config.timeout = timeout;
  config.ports = checkPorts(body.ports) ?? [];
  config.vcpus = checkVcpus(body.resources) ?? config.vcpus;
  config.env = stringRecord(body.env, "env");
  config.tags = stringRecord(body.tags, "tags");
  config.networkPolicy = policyOf(body.networkPolicy);
  if (typeof body.persistent === "boolean") config.persistent = body.persistent;
  if (typeof body.region === "string") config.region = body.region;
  snapshotSettings(body, config);
  if (body.mounts !== undefined && body.mounts !== null && Object.keys(body.mounts as Json).length > 0) {
    bad("mounts (drives) are not supported by the emulator");
  }
  if (imageRoute) {
    if (body.runtime !== undefined) bad("runtime is not accepted by /v3/sandboxes: use image");
    if (body.image !== undefined) {
      const image = body.image;
      if (typeof image !== "string" || image === "") bad("image must be a string");
      const managed = /^vercel\/sandbox\/(.+)$/.exec(image)?.[1];
      if (managed === undefined || !MANAGED_IMAGES.includes(managed)) {
        bad(
          `image ${JSON.stringify(image)} is not available in the emulator (managed images: ${MANAGED_IMAGES.map((m) => `vercel/sandbox/${m}`).join(", ")})`,
        );
      }
      config.image = image;
    }
  } else {
    if (body.image !== undefined) bad("`runtime` and `image` cannot be used together");
    if (typeof body.runtime !== "string" || !RUNTIMES.includes(body.runtime)) {
      bad(`runtime must be one of ${RUNTIMES.join(", ")}`);
    }
    config.runtime = body.runtime;
  }
  const { source, snapshotId } = sourceOf(body.source);
  let disk: VercelDisk | undefined;
  if (snapshotId !== undefined) {
    const snapshot = ctx.fleet.liveSnapshot(snapshotId);
    if (!snapshot)
      throw new VercelApiError(apiError(410, "snapshot_not_found", `Snapshot not found: ${snapshotId}`));
    disk = snapshot.disk;
    config.runtime = snapshot.runtime;
  }
  await ctx.fleet.create(name, config, { disk, snapshotId, source });
  return sandboxAnswer(ctx, name, false);
}

async function forkSandbox(
  ctx: VercelRouteContext,
  sourceName: string,
  body: Json,
  url: URL,
): Promise<VercelAnswer> {
  checkProject(ctx, url.searchParams.get("projectId") ?? undefined);
  const source = recordOf(ctx, sourceName);
  const base = source.config;
  const config: VercelSandboxConfig = {
    ...base,
    tags: { ...base.tags },
    env: { ...base.env },
    ports: [...base.ports],
  };
  const timeout = checkTimeout(ctx, body.timeout);
  if (timeout !== undefined) config.timeout = timeout;
  const ports = checkPorts(body.ports);
  if (ports) config.ports = ports;
  config.vcpus = checkVcpus(body.resources) ?? config.vcpus;
  if (body.env !== undefined) config.env = stringRecord(body.env, "env");
  if (body.tags !== undefined) config.tags = stringRecord(body.tags, "tags");
  if (body.networkPolicy !== undefined) config.networkPolicy = policyOf(body.networkPolicy);
  if (typeof body.persistent === "boolean") config.persistent = body.persistent;
  snapshotSettings(body, config);
  const name =
    checkName(body.name) ?? `${sourceName.slice(0, 40)}-fork-${Math.random().toString(36).slice(2, 8)}`;
  // The service forks from the source's current snapshot (or its base environment when it has none).
  const snapshot = source.currentSnapshotId ? ctx.fleet.liveSnapshot(source.currentSnapshotId) : undefined;
  await ctx.fleet.create(name, config, { disk: snapshot?.disk, snapshotId: snapshot?.id });
  return sandboxAnswer(ctx, name, false);
}

function paginate<T>(items: T[], url: URL): { page: T[]; next: string | null } {
  const limit = Math.min(Math.max(Number(url.searchParams.get("limit") ?? 50) || 50, 1), 200);
  const cursor = url.searchParams.get("cursor");
  const start = cursor === null ? 0 : Number(cursor);
  if (!Number.isInteger(start) || start < 0) bad("cursor is not valid");
  const page = items.slice(start, start + limit);
  return { page, next: start + limit < items.length ? String(start + limit) : null };
}

function listSandboxes(ctx: VercelRouteContext, url: URL): VercelAnswer {
  checkProject(ctx, url.searchParams.get("project") ?? undefined);
  const prefix = url.searchParams.get("namePrefix");
  const tags = url.searchParams.getAll("tags");
  const ascending = url.searchParams.get("sortOrder") === "asc";
  let records = [...ctx.fleet.sandboxes.values()];
  if (prefix) records = records.filter((r) => r.name.startsWith(prefix));
  for (const tag of tags) {
    const at = tag.indexOf(":");
    if (at <= 0) bad("tags must be key:value");
    const key = tag.slice(0, at);
    const value = tag.slice(at + 1);
    records = records.filter((r) => r.config.tags[key] === value);
  }
  records.sort((a, b) => (ascending ? a.createdAt - b.createdAt : b.createdAt - a.createdAt));
  const { page, next } = paginate(records, url);
  return {
    status: 200,
    body: { sandboxes: page.map((r) => ctx.fleet.sandboxJSON(r)), pagination: { count: page.length, next } },
  };
}

async function updateSandbox(ctx: VercelRouteContext, name: string, body: Json): Promise<VercelAnswer> {
  const record = recordOf(ctx, name);
  const timeout = checkTimeout(ctx, body.timeout);
  const ports = checkPorts(body.ports);
  const vcpus = checkVcpus(body.resources);
  const policy = body.networkPolicy === undefined ? undefined : policyOf(body.networkPolicy);
  if (body.mounts !== undefined && body.mounts !== null && Object.keys(body.mounts as Json).length > 0) {
    bad("mounts (drives) are not supported by the emulator");
  }
  if (timeout !== undefined) record.config.timeout = timeout;
  if (ports) record.config.ports = ports;
  if (vcpus !== undefined) record.config.vcpus = vcpus;
  if (policy) record.config.networkPolicy = policy;
  if (body.tags !== undefined) record.config.tags = stringRecord(body.tags, "tags");
  if (typeof body.persistent === "boolean") record.config.persistent = body.persistent;
  snapshotSettings(body, record.config);
  if (typeof body.currentSnapshotId === "string") {
    if (!ctx.fleet.liveSnapshot(body.currentSnapshotId)) {
      throw new VercelApiError(
        apiError(410, "snapshot_not_found", `Snapshot not found: ${body.currentSnapshotId}`),
      );
    }
    record.currentSnapshotId = body.currentSnapshotId;
  }
  record.updatedAt = ctx.fleet.clock.now();
  return {
    status: 200,
    body: {
      sandbox: ctx.fleet.sandboxJSON(record),
      ...(ports ? { routes: ctx.fleet.routesOf(record) } : {}),
    },
  };
}

async function applyNetworkPolicy(session: VercelSession, body: Json): Promise<void> {
  const policy = policyOf(body);
  const network = session.machine?.network;
  const { egressOf } = await import("./vercel-network.js");
  const egress = egressOf(policy);
  if (!network) {
    if (egress !== "allow-all") bad("network policies need a backend with egress control");
  } else {
    try {
      await network.setEgress(egress);
    } catch (error) {
      if (SandboxError.isInstance(error) && (error.code === "Validation" || error.code === "NotSupported")) {
        bad(`the network policy cannot be enforced: ${error.message}`);
      }
      throw error;
    }
  }
  session.networkPolicy = policy;
  session.config.networkPolicy = policy;
}

function ndjsonHead(res: ServerResponse): void {
  res.writeHead(200, { "Content-Type": "application/x-ndjson", "Cache-Control": "no-cache" });
  res.flushHeaders();
}

function writeLine(res: ServerResponse, value: unknown): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed) return resolve();
    if (res.write(`${JSON.stringify(value)}\n`)) return resolve();
    // Back-pressure: a slow reader holds the stream, not the emulator's memory.
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

async function streamLogs(
  command: VercelCommand,
  res: ServerResponse,
  finalLine?: () => unknown,
): Promise<void> {
  const stop = new AbortController();
  res.on("close", () => stop.abort());
  for await (const line of command.follow(stop.signal)) await writeLine(res, line);
  if (finalLine && !stop.signal.aborted && command.lines.at(-1)?.stream !== "error")
    await writeLine(res, finalLine());
  res.end();
}

async function startCommand(
  ctx: VercelRouteContext,
  session: VercelSession,
  body: Json,
  res: ServerResponse,
): Promise<VercelAnswer | undefined> {
  if (typeof body.command !== "string" || body.command === "") bad("command must be a non-empty string");
  const args = body.args ?? [];
  if (!Array.isArray(args) || !args.every((a) => typeof a === "string"))
    bad("args must be an array of strings");
  const env = stringRecord(body.env, "env");
  for (const key of Object.keys(env))
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) bad(`env key ${JSON.stringify(key)} is not a valid name`);
  const cwd = body.cwd === undefined || body.cwd === null ? session.cwd : body.cwd;
  if (typeof cwd !== "string" || cwd === "") bad("cwd must be a string");
  const timeoutMs = positiveInteger(body.timeout, "timeout");
  if (body.sudo !== undefined && body.sudo !== null && typeof body.sudo !== "boolean")
    bad("sudo must be a boolean");
  const machine = session.machine!;
  let command: VercelCommand;
  try {
    command = await VercelCommand.start(
      machine,
      session.id,
      {
        command: body.command,
        args: args as string[],
        cwd: cwd.startsWith("/") ? cwd : `${session.cwd}/${cwd}`,
        env: { ...session.config.env, ...env },
        timeoutMs,
        sudo: body.sudo === true,
      },
      ctx.fleet.clock,
      session.layout,
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (SandboxError.isInstance(error) && error.code === "NotFound")
      bad(`the command could not start: ${message}`);
    bad(`the command could not start: ${message}`);
  }
  session.commands.set(command.id, command);
  if (body.wait !== true) return { status: 200, body: { command: command.toJSON() } };
  ndjsonHead(res);
  await writeLine(res, { command: command.toJSON() });
  await streamLogs(command, res, () => ({ command: command.toJSON() }));
  return undefined;
}

function commandOf(session: VercelSession, id: string): VercelCommand {
  const command = session.commands.get(id);
  if (!command) throw new VercelApiError(apiError(404, "command_not_found", `Command not found: ${id}`));
  return command;
}

/** Relative paths resolve against `cwd` (the request's) or the session's workdir. */
function resolvePath(session: VercelSession, path: unknown, cwd: unknown): string {
  if (typeof path !== "string" || path === "") bad("path must be a non-empty string");
  if (path.includes("\0")) bad("path must not contain NUL");
  if (path.startsWith("/")) return path;
  const base = typeof cwd === "string" && cwd !== "" ? cwd : session.cwd;
  return `${base.replace(/\/+$/, "")}/${path}`;
}

async function writeFiles(
  ctx: VercelRouteContext,
  session: VercelSession,
  req: IncomingMessage,
): Promise<VercelAnswer> {
  const extractDir = String(req.headers["x-cwd"] ?? "/");
  const body = await readBody(req, ctx.maxBodyBytes);
  let entries: ReturnType<typeof readTarGz>;
  try {
    entries = readTarGz(body);
  } catch (error) {
    if (error instanceof TarFormatError) bad(error.message);
    throw error;
  }
  const machine = session.machine!;
  const planned = entries.map((entry) => {
    if (entry.name.split("/").includes(".."))
      bad(`entry ${JSON.stringify(entry.name)} escapes the extraction directory`);
    if (entry.type !== "dir" && entry.type !== "file")
      bad(`entry ${JSON.stringify(entry.name)}: symlinks are not written by the emulator`);
    const path = entry.name.startsWith("/") ? entry.name : `${extractDir.replace(/\/+$/, "")}/${entry.name}`;
    return { entry, path };
  });
  const failed = (path: string, error: unknown): never => {
    if (error instanceof VercelApiError) throw error;
    throw new VercelApiError(
      apiError(
        400,
        "file_write_failed",
        `${path}: ${error instanceof Error ? error.message : String(error)}`,
      ),
    );
  };
  // The service extracts as the session's user: its directories are made by that user, and a directory
  // it cannot write to fails the call. The files' bytes are then written by the backend and handed over
  // (a directory swapped for a symlink between the check and the write gains the guest's user nothing it
  // lacks: it has password-less sudo, and the backend's write stays inside the machine).
  const dirs = [
    ...new Set(planned.map(({ entry, path }) => (entry.type === "dir" ? path : posix.dirname(path)))),
  ];
  const made = await runAsUser(machine, session.layout, USER_MKDIRS, dirs);
  if (made && made.exitCode !== 0) failed(dirs.join(", "), new Error(made.stderr.trim()));
  const written: string[] = [];
  for (const { entry, path } of planned) {
    try {
      if (entry.type === "dir") {
        if (!made) await machine.files.mkdir(path, { recursive: true });
      } else {
        await machine.files.write(path, entry.data, entry.mode ? { mode: entry.mode } : {});
        written.push(path);
      }
    } catch (error) {
      failed(path, error);
    }
  }
  await chownToUser(machine, session.layout, written).catch((error: unknown) => failed(written[0]!, error));
  return { status: 200, body: {} };
}

/** Makes each directory given (as the session's user) and checks that user can write into it. */
const USER_MKDIRS =
  'for d in "$@"; do mkdir -p -- "$d" || exit 1; [ -w "$d" ] || { echo "$d: Permission denied" >&2; exit 1; }; done';

/** Opens a file as the session's user without reading it: the user's permissions decide, as on the service. */
const USER_CAN_READ = 'head -c 0 -- "$1"';

async function readFile(
  session: VercelSession,
  body: Json,
  res: ServerResponse,
): Promise<VercelAnswer | undefined> {
  const path = resolvePath(session, body.path, body.cwd);
  const machine = session.machine!;
  const access = await runAsUser(machine, session.layout, USER_CAN_READ, [path]);
  if (access && access.exitCode !== 0) {
    if (/No such file/i.test(access.stderr)) {
      return { status: 404, body: { error: { code: "file_not_found", message: `File not found: ${path}` } } };
    }
    throw new VercelApiError(apiError(400, "file_read_failed", `${path}: ${access.stderr.trim()}`));
  }
  let data: Uint8Array;
  try {
    data = await machine.files.read(path);
  } catch (error) {
    if (SandboxError.isInstance(error) && error.code === "NotFound") {
      return { status: 404, body: { error: { code: "file_not_found", message: `File not found: ${path}` } } };
    }
    throw new VercelApiError(
      apiError(400, "file_read_failed", `${path}: ${error instanceof Error ? error.message : String(error)}`),
    );
  }
  res.writeHead(200, {
    "Content-Type": "application/octet-stream",
    "Content-Length": String(data.byteLength),
  });
  res.end(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  return undefined;
}

async function mkdir(session: VercelSession, body: Json): Promise<VercelAnswer> {
  const path = resolvePath(session, body.path, body.cwd);
  const made = await runAsUser(session.machine!, session.layout, 'mkdir -- "$1"', [path]);
  if (made) {
    if (made.exitCode === 0) return { status: 200, body: {} };
    const [status, name] = /File exists/i.test(made.stderr)
      ? [409, "file_exists"]
      : /No such file/i.test(made.stderr)
        ? [404, "file_not_found"]
        : [400, "mkdir_failed"];
    throw new VercelApiError(apiError(status, name, `${path}: ${made.stderr.trim()}`));
  }
  try {
    await session.machine!.files.mkdir(path, { recursive: false });
  } catch (error) {
    const code = SandboxError.isInstance(error) ? error.code : undefined;
    const [status, name] =
      code === "NotFound"
        ? [404, "file_not_found"]
        : code === "Conflict"
          ? [409, "file_exists"]
          : [400, "mkdir_failed"];
    throw new VercelApiError(
      apiError(status, name, `${path}: ${error instanceof Error ? error.message : String(error)}`),
    );
  }
  return { status: 200, body: {} };
}

async function sessionRoutes(
  ctx: VercelRouteContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  rest: string[],
  setRoute: (route: string) => void,
): Promise<VercelAnswer | undefined> {
  const method = req.method ?? "GET";
  const [sessionId, ...tail] = rest;
  const route = (name: string) => setRoute(`${method} /v2/sandboxes/sessions/:id${name}`);
  if (sessionId === undefined) {
    setRoute(`${method} /v2/sandboxes/sessions`);
    if (method !== "GET") return apiError(405, "method_not_allowed", "Method not allowed");
    const name = url.searchParams.get("name");
    const sessions = [...ctx.fleet.sessions.values()]
      .filter((s) => name === null || s.sandboxName === name)
      .sort((a, b) => b.requestedAt - a.requestedAt);
    const { page, next } = paginate(sessions, url);
    return {
      status: 200,
      body: { sessions: page.map((s) => s.toJSON()), pagination: { count: page.length, next } },
    };
  }
  const key = `${method} ${tail.join("/")}`;
  if (key === "GET ") {
    route("");
    const session = ctx.fleet.sessions.get(sessionId);
    if (!session) return apiError(404, "sandbox_not_found", `Sandbox session not found: ${sessionId}`);
    const record = ctx.fleet.sandboxes.get(session.sandboxName);
    return {
      status: 200,
      body: { session: session.toJSON(), routes: record ? ctx.fleet.routesOf(record) : [] },
    };
  }
  if (key === "POST cmd") {
    route("/cmd");
    const body = await readJson(req, ctx.maxBodyBytes);
    return startCommand(ctx, runningSession(ctx, sessionId), body, res);
  }
  if (method === "GET" && tail[0] === "cmd" && tail.length === 2) {
    route("/cmd/:cmdId");
    const session = ctx.fleet.sessions.get(sessionId);
    if (!session) return apiError(404, "sandbox_not_found", `Sandbox session not found: ${sessionId}`);
    const command = commandOf(session, tail[1]!);
    if (url.searchParams.get("wait") === "true") {
      const gone = new Promise<void>((resolve) => res.on("close", () => resolve()));
      await Promise.race([command.whenDone(), gone]);
      if (!command.done) return undefined;
    }
    return { status: 200, body: { command: command.toJSON() } };
  }
  if (method === "GET" && tail[0] === "cmd" && tail[2] === "logs" && tail.length === 3) {
    route("/cmd/:cmdId/logs");
    const session = ctx.fleet.sessions.get(sessionId);
    if (!session) return apiError(404, "sandbox_not_found", `Sandbox session not found: ${sessionId}`);
    const command = commandOf(session, tail[1]!);
    ndjsonHead(res);
    await streamLogs(command, res);
    return undefined;
  }
  if (method === "POST" && tail[0] === "cmd" && tail[2] === "kill" && tail.length === 3) {
    route("/cmd/:cmdId/kill");
    const body = await readJson(req, ctx.maxBodyBytes);
    const session = runningSession(ctx, sessionId);
    const command = commandOf(session, tail[1]!);
    const signal = body.signal ?? 15;
    if (typeof signal !== "number" || signalName(signal) === undefined)
      bad("signal must be a known signal number");
    await command.kill(signal);
    return { status: 200, body: { command: command.toJSON() } };
  }
  if (key === "POST fs/mkdir") {
    route("/fs/mkdir");
    const body = await readJson(req, ctx.maxBodyBytes);
    return mkdir(runningSession(ctx, sessionId), body);
  }
  if (key === "POST fs/write") {
    route("/fs/write");
    const session = runningSession(ctx, sessionId);
    return writeFiles(ctx, session, req);
  }
  if (key === "POST fs/read") {
    route("/fs/read");
    const body = await readJson(req, ctx.maxBodyBytes);
    return readFile(runningSession(ctx, sessionId), body, res);
  }
  if (key === "POST stop") {
    route("/stop");
    req.resume();
    const session = ctx.fleet.sessions.get(sessionId);
    if (!session) return apiError(404, "sandbox_not_found", `Sandbox session not found: ${sessionId}`);
    const { snapshot } = await ctx.fleet.stopSession(session, "request");
    const record = ctx.fleet.sandboxes.get(session.sandboxName);
    return {
      status: 200,
      body: {
        session: session.toJSON(),
        ...(record ? { sandbox: ctx.fleet.sandboxJSON(record) } : {}),
        ...(snapshot ? { snapshot: ctx.fleet.snapshotJSON(snapshot) } : {}),
      },
    };
  }
  if (key === "POST extend-timeout") {
    route("/extend-timeout");
    const body = await readJson(req, ctx.maxBodyBytes);
    const session = runningSession(ctx, sessionId);
    const duration = positiveInteger(body.duration, "duration");
    if (duration === undefined) bad("duration is required");
    const max = PLAN_MAX_TIMEOUT_MS[ctx.plan];
    if (session.timeout + duration > max) {
      throw new VercelApiError(
        apiError(
          400,
          "sandbox_timeout_invalid",
          `the timeout cannot be extended beyond ${max} ms on the ${ctx.plan} plan`,
        ),
      );
    }
    ctx.fleet.extend(session, duration);
    return { status: 200, body: { session: session.toJSON() } };
  }
  if (key === "POST network-policy") {
    route("/network-policy");
    const body = await readJson(req, ctx.maxBodyBytes);
    const session = runningSession(ctx, sessionId);
    await applyNetworkPolicy(session, body);
    return { status: 200, body: { session: session.toJSON() } };
  }
  if (key === "POST snapshot") {
    route("/snapshot");
    const body = await readJson(req, ctx.maxBodyBytes);
    const session = runningSession(ctx, sessionId);
    const expiration = body.expiration;
    if (
      expiration !== undefined &&
      (typeof expiration !== "number" || !Number.isInteger(expiration) || expiration < 0)
    ) {
      bad("expiration must be a non-negative integer of milliseconds");
    }
    const snapshot = await ctx.fleet.snapshot(session, expiration as number | undefined);
    return { status: 200, body: { snapshot: ctx.fleet.snapshotJSON(snapshot), session: session.toJSON() } };
  }
  route("/*");
  req.resume();
  return apiError(404, "not_found", `No route for ${method} ${url.pathname}`);
}

async function snapshotRoutes(
  ctx: VercelRouteContext,
  req: IncomingMessage,
  url: URL,
  id: string | undefined,
  setRoute: (r: string) => void,
): Promise<VercelAnswer> {
  const method = req.method ?? "GET";
  req.resume();
  if (id === undefined) {
    setRoute(`${method} /v2/sandboxes/snapshots`);
    if (method !== "GET") return apiError(405, "method_not_allowed", "Method not allowed");
    checkProject(ctx, url.searchParams.get("project") ?? undefined);
    const name = url.searchParams.get("name");
    const snapshots = [...ctx.fleet.snapshots.values()]
      .filter((s) => ctx.fleet.liveSnapshot(s.id) && (name === null || s.sandboxName === name))
      .sort((a, b) => b.createdAt - a.createdAt);
    const { page, next } = paginate(snapshots, url);
    return {
      status: 200,
      body: {
        snapshots: page.map((s) => ctx.fleet.snapshotJSON(s)),
        pagination: { count: page.length, next },
      },
    };
  }
  setRoute(`${method} /v2/sandboxes/snapshots/:id`);
  const snapshot = ctx.fleet.liveSnapshot(id);
  if (!snapshot) return apiError(404, "snapshot_not_found", `Snapshot not found: ${id}`);
  if (method === "GET") return { status: 200, body: { snapshot: ctx.fleet.snapshotJSON(snapshot) } };
  if (method === "DELETE") {
    ctx.fleet.deleteSnapshot(snapshot);
    return { status: 200, body: { snapshot: ctx.fleet.snapshotJSON(snapshot) } };
  }
  return apiError(405, "method_not_allowed", "Method not allowed");
}

/** Handles one API request (`url` relative to the API base, i.e. starting at `/v2` or `/v3`). */
export async function serveVercelApi(
  ctx: VercelRouteContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  setRoute: (route: string) => void,
): Promise<void> {
  const method = req.method ?? "GET";
  const path = url.pathname.replace(/^\/api(?=\/)/, "");
  try {
    const denied = ctx.auth.check(req.headers.authorization, url.searchParams.get("teamId"));
    if (denied) {
      setRoute(`${method} (unauthenticated)`);
      req.resume();
      return send(res, apiError(denied.status, denied.code, denied.message));
    }
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    let answer: VercelAnswer | undefined;
    if ((parts[0] === "v2" || parts[0] === "v3") && parts[1] === "sandboxes") {
      const rest = parts.slice(2);
      if (rest.length === 0) {
        setRoute(`${method} /${parts[0]}/sandboxes`);
        if (method === "POST")
          answer = await createSandbox(ctx, await readJson(req, ctx.maxBodyBytes), parts[0] === "v3");
        else if (method === "GET" && parts[0] === "v2") {
          req.resume();
          answer = listSandboxes(ctx, url);
        } else answer = apiError(405, "method_not_allowed", "Method not allowed");
      } else if (parts[0] === "v2" && rest[0] === "sessions") {
        answer = await sessionRoutes(ctx, req, res, url, rest.slice(1), setRoute);
      } else if (parts[0] === "v2" && rest[0] === "snapshots") {
        answer = await snapshotRoutes(ctx, req, url, rest[1], setRoute);
      } else if (parts[0] === "v2" && rest.length === 2 && rest[1] === "fork" && method === "POST") {
        setRoute("POST /v2/sandboxes/:name/fork");
        answer = await forkSandbox(ctx, rest[0]!, await readJson(req, ctx.maxBodyBytes), url);
      } else if (parts[0] === "v2" && rest.length === 1) {
        const name = rest[0]!;
        setRoute(`${method} /v2/sandboxes/:name`);
        if (method === "GET") {
          req.resume();
          checkProject(ctx, url.searchParams.get("projectId") ?? undefined);
          const record = recordOf(ctx, name);
          const resumed = url.searchParams.get("resume") === "true" ? await ctx.fleet.resume(record) : false;
          answer = sandboxAnswer(ctx, name, resumed);
        } else if (method === "PATCH") {
          answer = await updateSandbox(ctx, name, await readJson(req, ctx.maxBodyBytes));
        } else if (method === "DELETE") {
          req.resume();
          const record = recordOf(ctx, name);
          await ctx.fleet.remove(record);
          answer = { status: 200, body: { sandbox: ctx.fleet.sandboxJSON(record) } };
        } else answer = apiError(405, "method_not_allowed", "Method not allowed");
      }
    }
    if (answer === undefined && !res.headersSent && !res.writableEnded && !res.destroyed) {
      setRoute(`${method} (unknown)`);
      req.resume();
      answer = apiError(404, "not_found", `No route for ${method} ${url.pathname}`);
    }
    if (answer) send(res, answer);
  } catch (error) {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (error instanceof VercelApiError) return send(res, error.answer);
    throw error;
  }
}
