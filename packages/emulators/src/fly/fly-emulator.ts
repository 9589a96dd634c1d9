/**
 * `startFlyEmulator()`: an offline Fly Machines API. fly-go, flyctl's Machines calls and sbox's provider-fly
 * use it as they use api.machines.dev once the variables in `env` are set. Every machine is a sandbox of
 * the backend (provider-local by default, Docker on request) running the machine's `init` command.
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
import { newFlyToken } from "./fly-auth.js";
import { FlyFleet } from "./fly-fleet.js";
import type { FlyImageMap } from "./fly-machine.js";
import { serveFlyApi } from "./fly-machines-routes.js";
import { serveFlyProxy } from "./fly-proxy.js";

/** The image the docker backend runs Fly machines from unless `images` maps one. */
export const FLY_DOCKER_DEFAULT_IMAGE = "sbox-debian:bookworm";

/** Options of {@link startFlyEmulator}. */
export interface FlyEmulatorOptions {
  /** Where machines run: `"local"` (default), `"docker"`, `{ name, options }` or a `SandboxProvider`. */
  backend?: EmulatorBackendInput | undefined;
  /** Port of the Machines API; 0 or absent picks a free one. */
  port?: number | undefined;
  /** Port of the Fly Proxy stand-in; default `port + 1` when `port` is set, else a free one. */
  proxyPort?: number | undefined;
  /** Address to listen on (default `127.0.0.1`). */
  host?: string | undefined;
  /** Tokens the API accepts: macaroons (`fm2_…`, sent with `FlyV1`) or user tokens (sent with `Bearer`). Default: one fresh macaroon. */
  tokens?: readonly string[] | undefined;
  /** Apps that exist from the start (default `["sbox-emulator"]`); more can be created through the API. */
  apps?: readonly string[] | undefined;
  /** Region of machines created without one (default `ams`). */
  region?: string | undefined;
  /** Fly images mapped to backend templates; `false` marks an image that cannot be pulled (its boots fail). */
  images?: FlyImageMap | undefined;
  /** How long a destroyed machine stays visible as `destroyed` (default 60 000 ms). */
  destroyedLingerMs?: number | undefined;
  clock?: EmulatorClock | undefined;
  faults?: readonly FaultRule[] | undefined;
}

/** A running Fly emulator. */
export interface FlyEmulator {
  /** Machines API base URL (`FLY_API_HOSTNAME`). */
  readonly url: string;
  /** Base URL of the Fly Proxy stand-in: `<proxyUrl>/<app>/<port>/`. */
  readonly proxyUrl: string;
  /** The first accepted token, as `fly tokens create` prints it (`FlyV1 fm2_…`) for a macaroon. */
  readonly token: string;
  /** The first app. */
  readonly app: string;
  /** Exactly the variables fly-go, flyctl and provider-fly need. */
  readonly env: Readonly<Record<string, string>>;
  readonly backend: string;
  readonly faults: FaultInjector;
  readonly log: readonly RequestLogEntry[];
  /** Ids of the machines that exist (destroyed ones included while they linger). */
  machineIds(): string[];
  /**
   * The backend sandbox a machine runs in (`undefined` before its first boot and after destroy), for tests
   * that check a machine's processes and files from inside it.
   */
  machineSandbox(id: string): Sandbox<AnyCapabilities> | undefined;
  /** The state a machine is in (`undefined` once it is gone). */
  machineState(id: string): string | undefined;
  /** Fault injection at the machine level: while held, boots never finish (machines stay `starting`). */
  holdBoots(hold: boolean): void;
  /** Destroys every machine and stops listening. */
  close(): Promise<void>;
}

function flyError(_status: number, message: string): unknown {
  return { error: message };
}

/** Starts a Fly emulator. */
export async function startFlyEmulator(options: FlyEmulatorOptions = {}): Promise<FlyEmulator> {
  const host = options.host ?? "127.0.0.1";
  const clock = options.clock ?? systemClock;
  const tokens = options.tokens && options.tokens.length > 0 ? [...options.tokens] : [newFlyToken()];
  const apps = options.apps && options.apps.length > 0 ? options.apps : ["sbox-emulator"];
  const backend = await openBackend(options.backend, {
    vendor: "fly",
    docker: { image: FLY_DOCKER_DEFAULT_IMAGE },
  });
  const fleet = new FlyFleet({
    backend,
    clock,
    images: options.images ?? {},
    defaultTemplate: undefined,
    destroyedLingerMs: options.destroyedLingerMs ?? 60_000,
    defaultRegion: options.region ?? "ams",
    apps,
  });
  const faults = createFaultInjector(options.faults);
  const log: RequestLogEntry[] = [];
  const context = { fleet, tokens, owner: "emulator@fly.local" };
  const servers: EmulatorHttpServer[] = [];
  await startHttpServers(
    { host, faults, log, errorBody: flyError },
    [
      {
        name: "fly machines",
        port: options.port,
        handler: (req, res, ctx) => serveFlyApi(context, req, res, ctx.url, ctx.setRoute),
      },
      {
        name: "fly proxy",
        port: options.proxyPort ?? (options.port ? options.port + 1 : 0),
        handler: (req, res, ctx) => serveFlyProxy(fleet, req, res, ctx.url, ctx.setRoute),
      },
    ],
    servers,
    () => backend.close(),
  );
  const [api, proxy] = servers as [EmulatorHttpServer, EmulatorHttpServer];
  const first = tokens[0]!;
  const token = first.startsWith("fm") ? `FlyV1 ${first}` : first;
  let closing: Promise<void> | undefined;
  return {
    url: api.url,
    proxyUrl: proxy.url,
    token,
    app: apps[0]!,
    env: { FLY_API_HOSTNAME: api.url, FLY_API_TOKEN: token, FLY_APP: apps[0]! },
    backend: backend.name,
    faults,
    log,
    machineIds: () => [...fleet.machines.keys()],
    machineSandbox: (id) => fleet.machines.get(id)?.sandbox,
    machineState: (id) => fleet.machines.get(id)?.state,
    holdBoots: (hold) => fleet.holdBoots(hold),
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
