/**
 * `startVercelEmulator()`: an offline Vercel Sandbox API. `@vercel/sandbox` talks to it as to
 * `https://vercel.com/api` once its requests are sent there — the SDK has no setting for its API origin,
 * so a client passes a `fetch` that rewrites the origin (`vercelFetch` below, or provider-vercel's
 * `apiUrl` option) — with the printed credentials: an access token with team and project, or
 * `VERCEL_OIDC_TOKEN`. Every session is a sandbox of the backend (provider-local by default, Docker on
 * request); the session timeout, command timeouts and plan limits are enforced as the service does.
 */
import type { AnyCapabilities, Sandbox } from "@sbox/core";
import { type EmulatorBackendInput, openBackend } from "../backend.js";
import { type EmulatorClock, systemClock } from "../clock.js";
import {
  createFaultInjector,
  type EmulatorHttpServer,
  type FaultInjector,
  type FaultRule,
  type RequestLogEntry,
  startHttpServers,
} from "../http-server.js";
import { createVercelAuth } from "./vercel-auth.js";
import { VercelFleet } from "./vercel-fleet.js";
import type { VercelPlan } from "./vercel-limits.js";
import { serveVercelApi } from "./vercel-routes.js";
import { serveVercelRoute } from "./vercel-routes-proxy.js";

/** The image the docker backend runs sessions from. */
export const VERCEL_DOCKER_DEFAULT_IMAGE = "sbox-vercel-base:latest";

/** The API origin the SDK calls. */
export const VERCEL_API_ORIGIN = "https://vercel.com/api";

/** Options of {@link startVercelEmulator}. */
export interface VercelEmulatorOptions {
  /** Where sessions run: `"local"` (default), `"docker"`, `{ name, options }` or a `SandboxProvider`. */
  backend?: EmulatorBackendInput | undefined;
  /** Port of the API; 0 or absent picks a free one. */
  port?: number | undefined;
  /** Port of the routes stand-in; default `port + 1` when `port` is set, else a free one. */
  routesPort?: number | undefined;
  /** Address to listen on (default `127.0.0.1`). */
  host?: string | undefined;
  /** The team (`teamId`) tokens are scoped to (default `team_sboxemulator`). */
  teamId?: string | undefined;
  /** The project (default `prj_sboxemulator`). */
  projectId?: string | undefined;
  /** The access token accepted (default: a fresh random one). */
  accessToken?: string | undefined;
  /** Whose limits apply: `"pro"` (default: 5-hour sessions) or `"hobby"` (45 minutes). */
  plan?: VercelPlan | undefined;
  /** Largest request body, in bytes (default 256 MiB). */
  maxBodyBytes?: number | undefined;
  /** Time source of every timeout (session, command, snapshot expiry); tests pass their own. */
  clock?: EmulatorClock | undefined;
  faults?: readonly FaultRule[] | undefined;
}

/** A running Vercel Sandbox emulator. */
export interface VercelEmulator {
  /** The API base, in place of `https://vercel.com/api`. */
  readonly url: string;
  /** Base URL of the routes stand-in: `<routesUrl>/<subdomain>/`. */
  readonly routesUrl: string;
  readonly teamId: string;
  readonly projectId: string;
  /** The accepted access token (a fake credential). */
  readonly token: string;
  /** An OIDC token (JWT with `owner_id`/`project_id`) for the same team and project. */
  readonly oidcToken: string;
  /** Exactly what a client needs: the access token with team and project, the OIDC token, the API URL. */
  readonly env: Readonly<Record<string, string>>;
  readonly backend: string;
  readonly faults: FaultInjector;
  readonly log: readonly RequestLogEntry[];
  /** A `fetch` that sends the SDK's `https://vercel.com/api` requests to this emulator. */
  readonly fetch: typeof globalThis.fetch;
  /** Names of the sandboxes that exist. */
  sandboxNames(): string[];
  /** The backend sandbox of a sandbox's running session (`undefined` when it is not running). */
  sessionSandbox(name: string): Sandbox<AnyCapabilities> | undefined;
  /** The status of a sandbox's current session. */
  sessionStatus(name: string): string | undefined;
  /** Stops every session and stops listening. */
  close(): Promise<void>;
}

function vercelError(status: number, message: string): unknown {
  return { error: { code: status >= 500 ? "internal_server_error" : "bad_request", message } };
}

/**
 * A `fetch` for `@vercel/sandbox` that sends what it addresses to `https://vercel.com/api` to `apiUrl`.
 * The SDK hands every request an undici `dispatcher` of its own; it is dropped, so the request goes
 * through the calling runtime's fetch whatever undici version the SDK bundles.
 */
export function vercelFetch(
  apiUrl: string,
  base: typeof globalThis.fetch = globalThis.fetch,
): typeof globalThis.fetch {
  const target = apiUrl.replace(/\/+$/, "");
  return ((input: string | URL | Request, init?: RequestInit & { dispatcher?: unknown }) => {
    const href = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const rewritten = href.startsWith(`${VERCEL_API_ORIGIN}/`)
      ? `${target}${href.slice(VERCEL_API_ORIGIN.length)}`
      : href;
    const { dispatcher: _dropped, ...rest } = init ?? {};
    return base(rewritten, { ...rest, redirect: "manual" });
  }) as typeof globalThis.fetch;
}

/** Starts a Vercel Sandbox emulator. */
export async function startVercelEmulator(options: VercelEmulatorOptions = {}): Promise<VercelEmulator> {
  const host = options.host ?? "127.0.0.1";
  const clock = options.clock ?? systemClock;
  const scope = {
    teamId: options.teamId ?? "team_sboxemulator",
    projectId: options.projectId ?? "prj_sboxemulator",
  };
  const auth = createVercelAuth(scope, clock.now(), options.accessToken);
  const backend = await openBackend(options.backend, {
    vendor: "vercel",
    docker: { image: VERCEL_DOCKER_DEFAULT_IMAGE },
  });
  const servers: EmulatorHttpServer[] = [];
  const fleet = new VercelFleet({ backend, clock, routesOrigin: () => servers[1]?.url ?? "" });
  const faults = createFaultInjector(options.faults);
  const log: RequestLogEntry[] = [];
  const context = {
    fleet,
    auth,
    plan: options.plan ?? ("pro" as const),
    maxBodyBytes: options.maxBodyBytes ?? 256 * 1024 * 1024,
  };
  await startHttpServers(
    { host, faults, log, errorBody: vercelError },
    [
      {
        name: "vercel api",
        port: options.port,
        handler: (req, res, ctx) => serveVercelApi(context, req, res, ctx.url, ctx.setRoute),
      },
      {
        name: "vercel routes",
        port: options.routesPort ?? (options.port ? options.port + 1 : 0),
        handler: (req, res, ctx) => serveVercelRoute(fleet, req, res, ctx.url, ctx.setRoute),
      },
    ],
    servers,
    () => backend.close(),
  );
  const [api, routes] = servers as [EmulatorHttpServer, EmulatorHttpServer];
  const url = `${api.url}/api`;
  let closing: Promise<void> | undefined;
  return {
    url,
    routesUrl: routes.url,
    teamId: scope.teamId,
    projectId: scope.projectId,
    token: auth.accessToken,
    oidcToken: auth.oidcToken,
    env: {
      VERCEL_TOKEN: auth.accessToken,
      VERCEL_TEAM_ID: scope.teamId,
      VERCEL_PROJECT_ID: scope.projectId,
      VERCEL_OIDC_TOKEN: auth.oidcToken,
      SBOX_VERCEL_API_URL: url,
    },
    backend: backend.name,
    faults,
    log,
    fetch: vercelFetch(url),
    sandboxNames: () => [...fleet.sandboxes.keys()],
    sessionSandbox: (name) => fleet.sandboxes.get(name)?.session.machine,
    sessionStatus: (name) => fleet.sandboxes.get(name)?.session.status,
    close() {
      closing ??= (async () => {
        await Promise.allSettled(servers.map((server) => server.close()));
        await fleet.close();
        await backend.close();
      })();
      return closing;
    },
  };
}
