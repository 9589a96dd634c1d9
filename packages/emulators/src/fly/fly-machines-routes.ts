/**
 * The Machines API routes (the OpenAPI document of superfly/docs, api/machines/openapi.json, and the
 * requests superfly/fly-go's flaps client sends): apps (list, create, get, delete) and machines — list
 * (state, region, metadata.*, summary, include_deleted, include_leases, limit/cursor), create (with
 * skip_launch, lease_ttl), get (version, include_leases), update (current_version), delete (force, or
 * fly-go's kill), start, stop (StopRequest), restart, suspend, signal, wait (state(s), version,
 * instance_id, from_event_id, timeout), exec, lease (create/refresh/release/show), metadata, cordon,
 * uncordon, events, versions and ps.
 *
 * Errors are `{ error, status? }` (`status` is Fly's machine-readable code, such as `name_taken`); a state
 * that forbids the call is 412 `failed_precondition`, a change without the nonce of the machine's lease
 * 409, a wait that runs out 408.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { readJsonObject, sendJsonResponse } from "../http-server.js";
import { checkAuthorization } from "./fly-auth.js";
import { execOnMachine } from "./fly-exec.js";
import type { FlyFleet } from "./fly-fleet.js";
import { DEFAULT_LEASE_TTL_S, FlyLeases, LEASE_NONCE_HEADER } from "./fly-leases.js";
import type { FlyMachine } from "./fly-machine.js";
import { FlyConfigError, normaliseConfig } from "./fly-machine-config.js";
import { RUNNING_STATES, satisfies, WAIT_STATES } from "./fly-states.js";

/** What the routes need. */
export interface FlyRoutesContext {
  readonly fleet: FlyFleet;
  readonly tokens: readonly string[];
  /** Who leases are recorded as taken by. */
  readonly owner: string;
}

/** Longest `/wait`, in seconds (the API's own bound). */
export const FLY_WAIT_MAX_SECONDS = 60;

function error(res: ServerResponse, status: number, message: string, code?: string): void {
  sendJsonResponse(res, status, code ? { error: message, status: code } : { error: message });
}

function ok(res: ServerResponse): void {
  sendJsonResponse(res, 200, { ok: true });
}

function flag(url: URL, name: string): boolean {
  const value = url.searchParams.get(name);
  return value === "true" || value === "1";
}

/** Parses a Go duration ("10s", "1m30s", "500ms") or a number of seconds into milliseconds. */
export function durationMs(value: unknown): number | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? value * 1000 : undefined;
  if (typeof value !== "string") return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
  const units: Record<string, number> = {
    ns: 1e-6,
    us: 1e-3,
    µs: 1e-3,
    ms: 1,
    s: 1000,
    m: 60_000,
    h: 3_600_000,
  };
  let total = 0;
  let rest = value;
  while (rest !== "") {
    const match = /^(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/.exec(rest);
    if (!match) return undefined;
    total += Number(match[1]) * units[match[2]!]!;
    rest = rest.slice(match[0].length);
  }
  return total;
}

/** Linux signal numbers of the signals the API names. */
const SIGNAL_NAMES: Readonly<Record<number, string>> = {
  1: "SIGHUP",
  2: "SIGINT",
  3: "SIGQUIT",
  4: "SIGILL",
  5: "SIGTRAP",
  6: "SIGABRT",
  8: "SIGFPE",
  9: "SIGKILL",
  10: "SIGUSR1",
  11: "SIGSEGV",
  12: "SIGUSR2",
  13: "SIGPIPE",
  14: "SIGALRM",
  15: "SIGTERM",
};

const SIGNALS = new Set([
  "SIGABRT",
  "SIGALRM",
  "SIGFPE",
  "SIGHUP",
  "SIGILL",
  "SIGINT",
  "SIGKILL",
  "SIGPIPE",
  "SIGQUIT",
  "SIGSEGV",
  "SIGTERM",
  "SIGTRAP",
  "SIGUSR1",
  "SIGUSR2",
]);

/** Matches the path: app and machine routes. */
interface Route {
  readonly name: string;
  readonly app?: string | undefined;
  readonly machineId?: string | undefined;
  readonly key?: string | undefined;
}

function decode(part: string | undefined): string | undefined {
  if (part === undefined) return undefined;
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** Names the route of a request (`POST /v1/apps/{app}/machines/{id}/stop`). */
export function flyRoute(method: string, path: string): Route {
  const parts = path.split("/").filter(Boolean);
  if (parts[0] !== "v1" || parts[1] !== "apps") return { name: `${method} ${path}` };
  const app = decode(parts[2]);
  if (parts.length === 2) return { name: `${method} /v1/apps` };
  if (parts.length === 3) return { name: `${method} /v1/apps/{app}`, app };
  if (parts[3] !== "machines") return { name: `${method} /v1/apps/{app}/${parts.slice(3).join("/")}`, app };
  if (parts.length === 4) return { name: `${method} /v1/apps/{app}/machines`, app };
  const machineId = decode(parts[4]);
  if (parts.length === 5) return { name: `${method} /v1/apps/{app}/machines/{id}`, app, machineId };
  if (parts[5] === "metadata" && parts.length === 7) {
    return {
      name: `${method} /v1/apps/{app}/machines/{id}/metadata/{key}`,
      app,
      machineId,
      key: decode(parts[6]),
    };
  }
  return { name: `${method} /v1/apps/{app}/machines/{id}/${parts.slice(5).join("/")}`, app, machineId };
}

/**
 * Routes that change a machine: refused with 409 when another client holds its lease. These are the
 * calls fly-go sends the lease nonce with; signals and metadata it sends without one (flyctl sets
 * metadata and kills machines it holds leases on), so they are not gated.
 */
const LEASED_ROUTES = new Set([
  "POST /v1/apps/{app}/machines/{id}",
  "DELETE /v1/apps/{app}/machines/{id}",
  "POST /v1/apps/{app}/machines/{id}/start",
  "POST /v1/apps/{app}/machines/{id}/stop",
  "POST /v1/apps/{app}/machines/{id}/restart",
  "POST /v1/apps/{app}/machines/{id}/suspend",
  "POST /v1/apps/{app}/machines/{id}/cordon",
  "POST /v1/apps/{app}/machines/{id}/uncordon",
]);

function pageOffset(cursor: string | null): number | undefined {
  if (!cursor) return 0;
  const offset = Number(Buffer.from(cursor, "base64url").toString("utf8"));
  return Number.isInteger(offset) && offset >= 0 ? offset : undefined;
}

function leaseSummary(fleet: FlyFleet, machine: FlyMachine): Record<string, unknown> | undefined {
  const lease = fleet.leases.current(machine.id);
  return lease
    ? { owner: lease.owner, description: lease.description, expires_at: lease.expiresAt }
    : undefined;
}

/** Handles one Machines API request. */
export async function serveFlyApi(
  context: FlyRoutesContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  setRoute: (route: string) => void,
): Promise<void> {
  const method = req.method ?? "GET";
  const route = flyRoute(method, url.pathname);
  setRoute(route.name);
  const denied = checkAuthorization(req.headers.authorization, context.tokens);
  if (denied) {
    req.resume();
    return error(res, 401, denied);
  }
  const { fleet } = context;
  const withBody = method === "POST" || method === "PUT" || method === "PATCH";
  if (!withBody) req.resume();
  const body = withBody ? await readJsonObject(req, 16 * 1024 * 1024) : {};
  if (body === undefined) return error(res, 400, "request body is not a JSON object");

  if (route.name === "GET /v1/apps") {
    const org = url.searchParams.get("org_slug");
    if (!org) return error(res, 400, "org_slug is required");
    const apps = [...fleet.apps.values()].filter((a) => org === "personal" || a.org === org);
    return sendJsonResponse(res, 200, {
      total_apps: apps.length,
      apps: apps.map((a) => ({
        id: a.id,
        name: a.name,
        machine_count: fleet.machinesOf(a.name).filter((m) => m.state !== "destroyed").length,
        network: a.network,
        status: "deployed",
        organization: { name: a.org, slug: a.org },
      })),
    });
  }
  if (route.name === "POST /v1/apps") {
    const name = body.app_name ?? body.name;
    if (typeof name !== "string" || !/^[a-z0-9][a-z0-9-]{1,62}$/.test(name)) {
      return error(res, 400, "name must be lowercase letters, digits and dashes");
    }
    if (fleet.apps.has(name)) return error(res, 422, `app name ${name} is already taken`, "name_taken");
    const org = typeof body.org_slug === "string" && body.org_slug !== "" ? body.org_slug : "personal";
    const app = fleet.addApp(name, org, typeof body.network === "string" ? body.network : "default");
    return sendJsonResponse(res, 201, { id: app.id, created_at: app.createdAt.getTime() });
  }

  const app = route.app === undefined ? undefined : fleet.apps.get(route.app);
  if (route.app !== undefined && !app) return error(res, 404, `app ${route.app} not found`);
  if (route.name === "GET /v1/apps/{app}") {
    return sendJsonResponse(res, 200, {
      id: app!.id,
      name: app!.name,
      machine_count: fleet.machinesOf(app!.name).length,
      network: app!.network,
      status: "deployed",
      organization: { name: app!.org, slug: app!.org },
    });
  }
  if (route.name === "DELETE /v1/apps/{app}") {
    await Promise.allSettled(fleet.machinesOf(app!.name).map((m) => m.destroy()));
    fleet.apps.delete(app!.name);
    return sendJsonResponse(res, 202);
  }
  if (route.name === "GET /v1/apps/{app}/machines") return listMachines(context, app!.name, url, res);
  if (route.name === "POST /v1/apps/{app}/machines") return createMachine(context, app!.name, body, res);

  if (route.machineId === undefined) return error(res, 404, "404 page not found");
  const machine = fleet.machines.get(route.machineId);
  if (!machine || machine.app !== app!.name) return error(res, 404, "machine not found");
  const nonceHeader = req.headers[LEASE_NONCE_HEADER];
  const nonce = typeof nonceHeader === "string" ? nonceHeader : undefined;
  if (LEASED_ROUTES.has(route.name)) {
    const conflict = fleet.leases.check(machine.id, nonce);
    if (conflict) return error(res, 409, conflict);
  }
  const gone = machine.state === "destroyed" || machine.state === "destroying";
  const precondition = (what: string) =>
    error(res, 412, `failed_precondition: machine ${machine.id} is ${machine.state}, cannot ${what}`);

  switch (route.name) {
    case "GET /v1/apps/{app}/machines/{id}": {
      const version = url.searchParams.get("version");
      const lease = flag(url, "include_leases") ? leaseSummary(fleet, machine) : undefined;
      const described = machine.describe(lease ? { lease } : {});
      if (version && version !== machine.version) {
        const old = machine.versions.find((v) => v.version === version);
        if (!old) return error(res, 404, `version ${version} not found`);
        return sendJsonResponse(res, 200, {
          ...described,
          config: old.config,
          version,
          instance_id: version,
        });
      }
      return sendJsonResponse(res, 200, described);
    }
    case "POST /v1/apps/{app}/machines/{id}": {
      if (gone) return precondition("update");
      if (body.current_version !== undefined && body.current_version !== machine.version) {
        return error(
          res,
          409,
          `machine ${machine.id} is at version ${machine.version}, not ${String(body.current_version)}`,
        );
      }
      let config: FlyMachine["config"];
      try {
        config = normaliseConfig(body.config);
      } catch (failure) {
        if (failure instanceof FlyConfigError) return error(res, 400, failure.message);
        throw failure;
      }
      const region = typeof body.region === "string" && body.region !== "" ? body.region : undefined;
      if (region !== undefined && region !== machine.region) {
        return error(res, 400, "a machine cannot change region; create a new machine instead");
      }
      const updating = machine.update(config, {
        skipLaunch: body.skip_launch === true,
        name: typeof body.name === "string" && body.name !== "" ? body.name : undefined,
      });
      // The answer describes the new version; the replacement goes on (waited for with /wait).
      void updating.catch(() => undefined);
      await Promise.resolve();
      return sendJsonResponse(res, 200, machine.describe());
    }
    case "DELETE /v1/apps/{app}/machines/{id}": {
      if (gone) return ok(res);
      const force = flag(url, "force") || flag(url, "kill");
      if (RUNNING_STATES.has(machine.state) && !force) {
        return error(
          res,
          412,
          "failed_precondition: unable to destroy machine, not currently stopped or suspended (pass force=true)",
        );
      }
      await machine.destroy();
      return ok(res);
    }
    case "POST /v1/apps/{app}/machines/{id}/start": {
      if (gone) return precondition("start");
      const previous = machine.state;
      void machine.start();
      return sendJsonResponse(res, 200, {
        previous_state: previous,
        migrated: false,
        new_host: "",
        status: "success",
      });
    }
    case "POST /v1/apps/{app}/machines/{id}/stop": {
      if (gone) return precondition("stop");
      const signal = body.signal;
      if (signal !== undefined && (typeof signal !== "string" || !SIGNALS.has(signal))) {
        return error(res, 400, `invalid signal ${JSON.stringify(signal)}`);
      }
      const timeout = durationMs(body.timeout);
      if (body.timeout !== undefined && timeout === undefined)
        return error(res, 400, "timeout must be a duration like 10s");
      void machine.stop(signal as string | undefined, timeout ?? 10_000);
      return ok(res);
    }
    case "POST /v1/apps/{app}/machines/{id}/restart": {
      if (machine.state !== "started") return precondition("restart");
      const signal = url.searchParams.get("signal") ?? undefined;
      if (signal !== undefined && !SIGNALS.has(signal)) return error(res, 400, `invalid signal ${signal}`);
      const timeout = durationMs(url.searchParams.get("timeout") ?? undefined);
      void machine.stop(signal, timeout ?? 10_000).then(() => machine.start("user"));
      return ok(res);
    }
    case "POST /v1/apps/{app}/machines/{id}/suspend": {
      if (machine.state === "suspended") return ok(res);
      if (machine.state !== "started") return precondition("suspend");
      void machine.suspend().catch(() => undefined);
      return ok(res);
    }
    case "POST /v1/apps/{app}/machines/{id}/signal": {
      // The spec names signals; fly-go's Kill sends the number (`{"signal": 9}`), which flyd takes too.
      const signal = typeof body.signal === "number" ? SIGNAL_NAMES[body.signal] : body.signal;
      if (typeof signal !== "string" || !SIGNALS.has(signal))
        return error(res, 400, `invalid signal ${JSON.stringify(signal)}`);
      if (machine.state !== "started") return precondition("signal");
      if (!(await machine.signal(signal))) return precondition("signal (no main process runs)");
      return ok(res);
    }
    case "GET /v1/apps/{app}/machines/{id}/wait":
      return waitFor(machine, url, res);
    case "POST /v1/apps/{app}/machines/{id}/exec": {
      const answer = await execOnMachine(machine, body);
      return sendJsonResponse(res, answer.status, answer.body);
    }
    case "GET /v1/apps/{app}/machines/{id}/lease": {
      const lease = fleet.leases.current(machine.id);
      if (!lease) return error(res, 404, "lease not found");
      return sendJsonResponse(res, 200, FlyLeases.describe(lease));
    }
    case "POST /v1/apps/{app}/machines/{id}/lease": {
      if (gone) return precondition("lease");
      const ttlRaw = body.ttl ?? url.searchParams.get("ttl") ?? DEFAULT_LEASE_TTL_S;
      const ttl = Number(ttlRaw);
      if (!Number.isInteger(ttl) || ttl < 1 || ttl > 3600)
        return error(res, 400, "ttl must be a whole number of seconds from 1 to 3600");
      const outcome = fleet.leases.acquire(machine.id, {
        ttl,
        description: typeof body.description === "string" ? body.description : "",
        owner: context.owner,
        nonce,
        version: machine.version,
      });
      if ("conflict" in outcome) {
        return error(res, 409, fleet.leases.check(machine.id, nonce) ?? "machine is leased");
      }
      // 201 for a new lease and for a refreshed one alike: the spec's only answer.
      return sendJsonResponse(res, 201, FlyLeases.describe(outcome.lease));
    }
    case "DELETE /v1/apps/{app}/machines/{id}/lease": {
      if (!nonce) return error(res, 400, `the ${LEASE_NONCE_HEADER} header is required`);
      const refused = fleet.leases.release(machine.id, nonce);
      if (refused) return error(res, 409, refused);
      return ok(res);
    }
    case "GET /v1/apps/{app}/machines/{id}/metadata":
      return sendJsonResponse(res, 200, machine.config.metadata ?? {});
    case "PUT /v1/apps/{app}/machines/{id}/metadata":
    case "PATCH /v1/apps/{app}/machines/{id}/metadata": {
      if (body.machine_version !== undefined && body.machine_version !== machine.version) {
        return error(res, 412, `machine ${machine.id} is at version ${machine.version}`);
      }
      const changes = body.metadata;
      if (typeof changes !== "object" || changes === null || Array.isArray(changes)) {
        return error(res, 400, "metadata must be an object");
      }
      const next = { ...(machine.config.metadata ?? {}) };
      for (const [key, value] of Object.entries(changes)) {
        if (value === null || value === "") delete next[key];
        else if (typeof value === "string") next[key] = value;
        else return error(res, 400, `metadata.${key} must be a string`);
      }
      machine.config = { ...machine.config, metadata: next };
      return sendJsonResponse(res, 204);
    }
    case "GET /v1/apps/{app}/machines/{id}/metadata/{key}": {
      const value = machine.config.metadata?.[route.key ?? ""];
      if (value === undefined) return error(res, 404, `metadata key ${route.key} not found`);
      return sendJsonResponse(res, 200, { value });
    }
    case "POST /v1/apps/{app}/machines/{id}/metadata/{key}": {
      if (typeof body.value !== "string") return error(res, 400, "value must be a string");
      machine.config = {
        ...machine.config,
        metadata: { ...(machine.config.metadata ?? {}), [route.key ?? ""]: body.value },
      };
      return sendJsonResponse(res, 204);
    }
    case "DELETE /v1/apps/{app}/machines/{id}/metadata/{key}": {
      const next = { ...(machine.config.metadata ?? {}) };
      delete next[route.key ?? ""];
      machine.config = { ...machine.config, metadata: next };
      return sendJsonResponse(res, 204);
    }
    case "POST /v1/apps/{app}/machines/{id}/cordon":
    case "POST /v1/apps/{app}/machines/{id}/uncordon":
      machine.cordoned = route.name.endsWith("/cordon");
      machine.record(machine.cordoned ? "cordon" : "uncordon", "ok", "user");
      return ok(res);
    case "GET /v1/apps/{app}/machines/{id}/events": {
      const limit = Number(url.searchParams.get("limit") ?? 20);
      if (!Number.isInteger(limit) || limit < 1 || limit > 50)
        return error(res, 400, "limit must be from 1 to 50");
      return sendJsonResponse(res, 200, machine.events.slice(0, limit));
    }
    case "GET /v1/apps/{app}/machines/{id}/versions":
      return sendJsonResponse(
        res,
        200,
        machine.versions.map((v) => ({ version: v.version, user_config: v.config })),
      );
    case "GET /v1/apps/{app}/machines/{id}/ps":
      return listProcesses(machine, res);
    default:
      return error(res, 404, `404 page not found (${route.name} is not a route of this emulator)`);
  }
}

async function listMachines(
  context: FlyRoutesContext,
  app: string,
  url: URL,
  res: ServerResponse,
): Promise<void> {
  const { fleet } = context;
  const states = url.searchParams
    .getAll("state")
    .flatMap((s) => s.split(","))
    .filter(Boolean);
  const region = url.searchParams.get("region");
  const metadata: [string, string][] = [];
  for (const [key, value] of url.searchParams)
    if (key.startsWith("metadata.")) metadata.push([key.slice(9), value]);
  const includeDeleted = flag(url, "include_deleted");
  const summary = flag(url, "summary");
  const includeLeases = flag(url, "include_leases");
  const matching = fleet
    .machinesOf(app)
    .filter((m) => includeDeleted || (m.state !== "destroyed" && m.state !== "destroying"))
    .filter((m) => states.length === 0 || states.includes(m.state))
    .filter((m) => region === null || m.region === region)
    .filter((m) => metadata.every(([k, v]) => m.config.metadata?.[k] === v));
  const limitRaw = url.searchParams.get("limit");
  const headers: Record<string, string> = {};
  let page = matching;
  if (limitRaw !== null) {
    const limit = Number(limitRaw);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      return error(res, 400, "limit must be from 1 to 1000");
    const offset = pageOffset(url.searchParams.get("cursor"));
    if (offset === undefined) return error(res, 400, "invalid cursor");
    page = matching.slice(offset, offset + limit);
    if (offset + limit < matching.length) {
      headers["fly-next-cursor"] = Buffer.from(String(offset + limit)).toString("base64url");
    }
  } else if (url.searchParams.has("cursor")) {
    return error(res, 400, "cursor requires limit");
  }
  sendJsonResponse(
    res,
    200,
    page.map((m) => {
      const lease = includeLeases ? leaseSummary(fleet, m) : undefined;
      return m.describe({ summary, ...(lease ? { lease } : {}) });
    }),
    headers,
  );
}

async function createMachine(
  context: FlyRoutesContext,
  app: string,
  body: Record<string, unknown>,
  res: ServerResponse,
): Promise<void> {
  const { fleet } = context;
  let config: FlyMachine["config"];
  try {
    config = normaliseConfig(body.config);
  } catch (failure) {
    if (failure instanceof FlyConfigError) return error(res, 400, failure.message);
    throw failure;
  }
  // Go decodes "" as no region: the platform picks one.
  if (body.region === "") delete body.region;
  if (body.region !== undefined && (typeof body.region !== "string" || !/^[a-z]{3}$/.test(body.region))) {
    return error(res, 400, `invalid region ${JSON.stringify(body.region)}`);
  }
  if (
    body.name !== undefined &&
    (typeof body.name !== "string" || !/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/.test(body.name))
  ) {
    return error(res, 400, `invalid name ${JSON.stringify(body.name)}`);
  }
  if (
    typeof body.name === "string" &&
    fleet.machinesOf(app).some((m) => m.name === body.name && m.state !== "destroyed")
  ) {
    return error(res, 409, `a machine named ${body.name} already exists in app ${app}`);
  }
  const machine = fleet.newMachine(app, config, {
    name: body.name as string | undefined,
    region: body.region as string | undefined,
  });
  let nonce: string | undefined;
  if (body.lease_ttl !== undefined) {
    const ttl = Number(body.lease_ttl);
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > 3600)
      return error(res, 400, "lease_ttl must be from 1 to 3600 seconds");
    const outcome = fleet.leases.acquire(machine.id, {
      ttl,
      description: "lease taken at create",
      owner: context.owner,
      version: machine.version,
    });
    if ("lease" in outcome) nonce = outcome.lease.nonce;
  }
  if (body.skip_launch !== true) void machine.start("user");
  sendJsonResponse(res, 200, machine.describe({ leaseNonce: nonce }));
}

async function waitFor(machine: FlyMachine, url: URL, res: ServerResponse): Promise<void> {
  const wanted = url.searchParams
    .getAll("state")
    .flatMap((s) => s.split(","))
    .filter(Boolean);
  const states = wanted.length === 0 ? ["started"] : wanted;
  const unknown = states.find((s) => !WAIT_STATES.includes(s));
  if (unknown)
    return error(res, 400, `invalid state ${JSON.stringify(unknown)}: one of ${WAIT_STATES.join(", ")}`);
  const timeoutRaw = url.searchParams.get("timeout");
  const seconds = timeoutRaw === null ? FLY_WAIT_MAX_SECONDS : Number(timeoutRaw);
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > FLY_WAIT_MAX_SECONDS) {
    return error(res, 400, `timeout must be a whole number of seconds from 1 to ${FLY_WAIT_MAX_SECONDS}`);
  }
  const version = url.searchParams.get("version") ?? url.searchParams.get("instance_id") ?? undefined;
  const fromEvent = url.searchParams.get("from_event_id") ?? undefined;
  const reached = (): Record<string, unknown> | undefined => {
    if (version && version !== machine.version) return undefined;
    if (!satisfies(machine.state, states)) return undefined;
    const event = machine.events[0];
    if (fromEvent && event && event.id <= fromEvent) return undefined;
    return { ok: true, state: machine.state, version: machine.version, event_id: event?.id ?? "" };
  };
  const now = reached();
  if (now) return sendJsonResponse(res, 200, now);
  await new Promise<void>((resolve) => {
    let done = false;
    const finish = (answer: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      unsubscribe();
      answer();
      resolve();
    };
    const unsubscribe = machine.onChange(() => {
      const answer = reached();
      if (answer) finish(() => sendJsonResponse(res, 200, answer));
      else if (
        machine.state === "destroyed" &&
        !states.includes("destroyed") &&
        !states.includes("settled")
      ) {
        finish(() => error(res, 412, `failed_precondition: machine ${machine.id} was destroyed`));
      }
    });
    const timer = setTimeout(
      () =>
        finish(() =>
          error(
            res,
            408,
            `deadline_exceeded: machine ${machine.id} did not reach ${states.join(" or ")} within ${seconds}s (it is ${machine.state})`,
          ),
        ),
      seconds * 1000,
    );
    res.on("close", () => finish(() => undefined));
  });
}

async function listProcesses(machine: FlyMachine, res: ServerResponse): Promise<void> {
  const sandbox = machine.running();
  if (!sandbox) return error(res, 412, `failed_precondition: machine ${machine.id} is ${machine.state}`);
  const script =
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
    'for d in /proc/[0-9]*; do p=${d#/proc/}; c=$(tr "\\000" " " < "$d/cmdline" 2>/dev/null); [ -n "$c" ] || continue; w=$(readlink "$d/cwd" 2>/dev/null); printf "%s\\t%s\\t%s\\n" "$p" "$w" "$c"; done';
  const result = await sandbox.commands.run(["sh", "-c", script]);
  const processes = result.stdout
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [pid, directory, command] = line.split("\t");
      return {
        pid: Number(pid),
        command: (command ?? "").trim(),
        directory: directory ?? "",
        cpu: 0,
        rss: 0,
        rtime: 0,
        stime: 0,
        listen_sockets: [],
      };
    });
  sendJsonResponse(res, 200, processes);
}
