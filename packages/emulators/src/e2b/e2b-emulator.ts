/**
 * `startE2BEmulator()`: an offline E2B. The unmodified `e2b` SDK talks to it as to e2b.app once the
 * variables in `env` are set: the control plane on one port (`E2B_API_URL`), sandbox traffic — envd and
 * the sandboxes' own ports — on another (`E2B_SANDBOX_URL`). Every sandbox is a real sandbox of the
 * backend (provider-local by default, Docker on request), laid out as E2B's base template.
 */
import { randomBytes } from "node:crypto";
import type { AnyCapabilities, EgressPolicy, Sandbox } from "@sbox/core";
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
import { serveControlPlane } from "./e2b-control-plane.js";
import type { E2BNetworkConfig } from "./e2b-network.js";
import { portUrlPath, serveSandboxTraffic } from "./e2b-sandbox-traffic.js";
import { E2BEmulatorState } from "./e2b-state.js";
import { type E2BExtraTemplates, E2BTemplates } from "./e2b-templates.js";

/**
 * The envd version the emulator reports: envd's own version at e2b-dev/infra@54693ff (0.6.13), newer than
 * every feature gate of the `e2b` SDK 2.51 (file metadata 0.6.2, watch entries 0.6.3, network mounts 0.6.4).
 */
export const E2B_EMULATED_ENVD_VERSION = "0.6.13";

/** The image the docker backend runs E2B sandboxes from (`scripts/build-e2b-base-image.sh` builds it). */
export const E2B_DOCKER_BASE_IMAGE = "sbox-e2b-base:latest";

/** The default domain sandbox hosts are named under: `.localhost` names resolve to loopback in browsers and curl. */
export const E2B_EMULATOR_DOMAIN = "e2b.localhost";

/** Options of {@link startE2BEmulator}. */
export interface E2BEmulatorOptions {
  /** Where machines run: `"local"` (default), `"docker"`, `{ name, options }` or a `SandboxProvider`. */
  backend?: EmulatorBackendInput | undefined;
  /** Port of the control plane (`E2B_API_URL`); 0 or absent picks a free one. */
  port?: number | undefined;
  /** Port of sandbox traffic (`E2B_SANDBOX_URL`); default `port + 1` when `port` is set, else a free one. */
  sandboxPort?: number | undefined;
  /** Address to listen on (default `127.0.0.1`). */
  host?: string | undefined;
  /** The API key the emulator accepts (default: a fresh random `e2b_...` key). */
  apiKey?: string | undefined;
  /** Domain of sandbox hosts (`<port>-<id>.<domain>`; default `e2b.localhost`). */
  domain?: string | undefined;
  /** Time source for timestamps and timeouts. */
  clock?: EmulatorClock | undefined;
  /** Faults injected from the start (more can be added through `faults`). */
  faults?: readonly FaultRule[] | undefined;
  /** More template names: a list (each on the backend's default image) or names mapped to backend templates. */
  templates?: E2BExtraTemplates | undefined;
  /** The envd version reported to clients (default {@link E2B_EMULATED_ENVD_VERSION}). */
  envdVersion?: string | undefined;
}

/** A running E2B emulator. */
export interface E2BEmulator {
  /** Control-plane URL (`E2B_API_URL`). */
  readonly url: string;
  /** Sandbox traffic URL (`E2B_SANDBOX_URL`). */
  readonly sandboxUrl: string;
  readonly apiKey: string;
  readonly domain: string;
  /** Exactly the variables the `e2b` SDK needs to use this emulator. */
  readonly env: Readonly<Record<string, string>>;
  /** The backend's provider name. */
  readonly backend: string;
  /** Faults to inject into either server. */
  readonly faults: FaultInjector;
  /** Requests both servers handled, oldest first. */
  readonly log: readonly RequestLogEntry[];
  /** Ids of the sandboxes alive now. */
  sandboxIds(): string[];
  /**
   * A URL of `port` of a sandbox that any HTTP client on this machine can fetch (no DNS, no TLS): the
   * sandbox server answers it as E2B's proxy answers `https://<port>-<id>.<domain>`. Browsers and curl
   * also reach `http://<port>-<id>.e2b.localhost:<sandbox port>` (`*.localhost` is loopback to them).
   */
  portUrl(sandboxId: string, port: number): string;
  /** What the emulator knows of a live sandbox (for tests that check what a client asked for). */
  sandboxRecord(id: string): E2BSandboxRecord | undefined;
  /** Kills every sandbox, deletes snapshots, stops listening. */
  close(): Promise<void>;
}

/** A read-only view of one emulated sandbox. */
export interface E2BSandboxRecord {
  readonly templateID: string;
  readonly state: "running" | "paused";
  readonly metadata: Readonly<Record<string, string>>;
  /** The network configuration as the client gave it. */
  readonly network: Readonly<E2BNetworkConfig>;
  /** The egress policy the backend enforces for it. */
  readonly egress: EgressPolicy;
  readonly endAt: Date;
  /** The backend sandbox, to look at its processes and files from inside. */
  readonly backend: Sandbox<AnyCapabilities>;
}

function e2bError(status: number, message: string): unknown {
  return { code: status, message };
}

/** Starts an E2B emulator. */
export async function startE2BEmulator(options: E2BEmulatorOptions = {}): Promise<E2BEmulator> {
  const host = options.host ?? "127.0.0.1";
  const clock = options.clock ?? systemClock;
  const apiKey = options.apiKey ?? `e2b_${randomBytes(20).toString("hex")}`;
  const domain = options.domain ?? E2B_EMULATOR_DOMAIN;
  const backend = await openBackend(options.backend, {
    vendor: "e2b",
    docker: { image: E2B_DOCKER_BASE_IMAGE },
  });
  const state = new E2BEmulatorState({
    apiKey,
    domain,
    backend,
    templates: new E2BTemplates(new Date(clock.now()), options.templates),
    clock,
    envdVersion: options.envdVersion ?? E2B_EMULATED_ENVD_VERSION,
  });
  const faults = createFaultInjector(options.faults);
  const log: RequestLogEntry[] = [];
  const servers: EmulatorHttpServer[] = [];
  const sandboxPort = options.sandboxPort ?? (options.port ? options.port + 1 : 0);
  await startHttpServers(
    { host, faults, log, errorBody: e2bError },
    [
      {
        name: "e2b api",
        port: options.port,
        handler: (req, res, context) => serveControlPlane(state, req, res, context.url, context.setRoute),
      },
      {
        name: "e2b sandbox",
        port: sandboxPort,
        handler: (req, res, context) => serveSandboxTraffic(state, req, res, context.url, context.setRoute),
      },
    ],
    servers,
    () => backend.close(),
  );
  const [api, sandbox] = servers as [EmulatorHttpServer, EmulatorHttpServer];
  let closing: Promise<void> | undefined;
  return {
    url: api.url,
    sandboxUrl: sandbox.url,
    apiKey,
    domain,
    env: {
      E2B_API_URL: api.url,
      E2B_SANDBOX_URL: sandbox.url,
      E2B_DOMAIN: domain,
      E2B_API_KEY: apiKey,
    },
    backend: backend.name,
    faults,
    log,
    sandboxIds: () => [...state.sandboxes.keys()],
    portUrl: (sandboxId, port) => `${sandbox.url}${portUrlPath(sandboxId, port)}`,
    sandboxRecord(id) {
      const sandbox = state.sandboxes.get(id);
      if (!sandbox) return undefined;
      return {
        templateID: sandbox.templateID,
        state: sandbox.state,
        metadata: sandbox.metadata,
        network: sandbox.network,
        egress: sandbox.egress,
        endAt: sandbox.endAt,
        backend: sandbox.backend,
      };
    },
    close() {
      closing ??= (async () => {
        await Promise.allSettled(servers.map((server) => server.close()));
        await state.close();
        await backend.close();
      })();
      return closing;
    },
  };
}
