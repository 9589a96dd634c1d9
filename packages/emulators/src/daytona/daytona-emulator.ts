/**
 * `startDaytonaEmulator()`: an offline Daytona. `@daytonaio/sdk` and sbox's provider-daytona use it as they
 * use app.daytona.io once the variables in `env` are set: the control plane under `<url>/api`, each
 * sandbox's toolbox under `<url>/toolbox/<id>`. Every sandbox is a sandbox of the backend (provider-local by
 * default, Docker on request).
 */
import { randomBytes } from "node:crypto";
import { type EmulatorBackendInput, openBackend } from "../backend.js";
import { type EmulatorClock, systemClock } from "../clock.js";
import {
  createFaultInjector,
  type FaultInjector,
  type FaultRule,
  type RequestLogEntry,
  rawAnswer,
  startHttpServer,
} from "../http-server.js";
import {
  type DaytonaControlPlaneContext,
  daytonaErrorBody,
  serveDaytonaControlPlane,
} from "./daytona-control-plane.js";
import { DaytonaFleet, type DaytonaSandboxRecord } from "./daytona-fleet.js";
import { DaytonaSignedPreviews, serveDaytonaPreview } from "./daytona-preview.js";
import { DaytonaPtys, daytonaPtySockets } from "./daytona-pty.js";
import { daytonaLogStreams } from "./daytona-session-logs.js";
import { DaytonaSessions, serveDaytonaToolbox } from "./daytona-toolbox.js";

/** The image the docker backend runs Daytona sandboxes from. */
export const DAYTONA_DOCKER_DEFAULT_IMAGE = "sbox-debian:bookworm";

/** Images a create from an image may name by default (Debian, like the backends' environments). */
export const DAYTONA_DEFAULT_IMAGES: readonly string[] = ["debian:bookworm", "debian:bookworm-slim"];

/** How long the emulator keeps an idle connection open. */
const DAYTONA_KEEP_ALIVE_MS = 65_000;

/** Options of {@link startDaytonaEmulator}. */
export interface DaytonaEmulatorOptions {
  /** Where sandboxes run: `"local"` (default), `"docker"`, `{ name, options }` or a `SandboxProvider`. */
  backend?: EmulatorBackendInput | undefined;
  /** Port to listen on; 0 or absent picks a free one. */
  port?: number | undefined;
  /** Address to listen on (default `127.0.0.1`). */
  host?: string | undefined;
  /**
   * The origin clients reach the emulator at, when that is not where it listens (behind a proxy or a port
   * mapping): sandboxes' `toolboxProxyUrl` and preview URLs are built on it. Default: the listening URL.
   */
  publicUrl?: string | undefined;
  /** The API key the emulator accepts (default: a fresh `dtn_…` key); any other gets 401. */
  apiKey?: string | undefined;
  /** The region (`target`) reported for every sandbox (default `us`). */
  target?: string | undefined;
  /** Snapshot names a create may name (default `["daytonaio/sandbox"]`); others fail with 400. */
  snapshots?: readonly string[] | undefined;
  /**
   * Images a create from an image (`FROM <image>`) may name (default {@link DAYTONA_DEFAULT_IMAGES}); a
   * build from another one ends `build_failed`. Nothing is built: a known image boots the backend's
   * environment, as a snapshot does.
   */
  images?: readonly string[] | undefined;
  clock?: EmulatorClock | undefined;
  faults?: readonly FaultRule[] | undefined;
  /**
   * The most bytes one frame of a session command's logs socket holds (default 1024, the daemon's read
   * size); smaller values cut the labelled stream at more places (1: every byte its own frame), as tests
   * of a client's demultiplexer want.
   */
  logFrameBytes?: number | undefined;
}

/** A running Daytona emulator. */
export interface DaytonaEmulator {
  /** The control plane's base URL (`DAYTONA_API_URL`, ending in `/api`). */
  readonly url: string;
  /** Where the emulator listens (differs from `url`'s origin when `publicUrl` is set). */
  readonly listenUrl: string;
  /** The accepted API key. */
  readonly apiKey: string;
  /** Exactly the variables `@daytonaio/sdk` reads. */
  readonly env: Readonly<Record<string, string>>;
  readonly backend: string;
  readonly faults: FaultInjector;
  /** Every request, with the route name of Daytona's API description it was served as. */
  readonly log: readonly RequestLogEntry[];
  /** Ids of the sandboxes that exist (destroyed ones included while they linger). */
  sandboxIds(): string[];
  /** The emulator's record of a sandbox: its state, intervals, and the create request as received. */
  sandboxRecord(id: string): DaytonaSandboxRecord | undefined;
  /**
   * Drops every open session-logs WebSocket without a close frame, as a lost connection would (a test's
   * fault); returns how many were open. The commands they followed go on running.
   */
  dropLogSockets(): number;
  /** Destroys every sandbox and stops listening. */
  close(): Promise<void>;
}

/** Starts a Daytona emulator. */
export async function startDaytonaEmulator(options: DaytonaEmulatorOptions = {}): Promise<DaytonaEmulator> {
  const host = options.host ?? "127.0.0.1";
  const clock = options.clock ?? systemClock;
  const apiKey = options.apiKey ?? `dtn_${randomBytes(24).toString("hex")}`;
  const backend = await openBackend(options.backend, {
    vendor: "daytona",
    docker: { image: DAYTONA_DOCKER_DEFAULT_IMAGE },
  });
  const fleet = new DaytonaFleet({
    backend,
    clock,
    snapshots: options.snapshots ?? ["daytonaio/sandbox"],
    images: options.images ?? DAYTONA_DEFAULT_IMAGES,
  });
  const sessions = new DaytonaSessions();
  const signed = new DaytonaSignedPreviews(clock);
  const ptys = new DaytonaPtys();
  const logStreams = daytonaLogStreams({ fleet, sessions, apiKey, frameBytes: options.logFrameBytes });
  const ptySockets = daytonaPtySockets({ fleet, ptys, apiKey });
  const faults = createFaultInjector(options.faults);
  const log: RequestLogEntry[] = [];
  let base = "";
  const control: DaytonaControlPlaneContext = {
    fleet,
    apiKey,
    organizationId: "sbox-emulator-org",
    target: options.target ?? "us",
    get toolboxProxyUrl() {
      return `${base}/toolbox`;
    },
    previewUrl: (id, port) => `${base}/preview/${id}/${port}`,
    signed,
  };
  let server: Awaited<ReturnType<typeof startHttpServer>>;
  try {
    server = await startHttpServer({
      name: "daytona",
      host,
      port: options.port,
      faults,
      log,
      errorBody: daytonaErrorBody,
      // Daytona's edge keeps idle connections longer than Node's client agent (5 s), so the client closes
      // first; equal timeouts would race and reset requests sent on a connection as it closes.
      keepAliveTimeoutMs: DAYTONA_KEEP_ALIVE_MS,
      onUpgrade: (req, socket, head) => {
        if (!logStreams.upgrade(req, socket, head) && !ptySockets(req, socket, head))
          rawAnswer(socket, 404, {}, daytonaErrorBody(404, "Not Found"));
      },
      handler: (req, res, ctx) =>
        ctx.url.pathname.startsWith("/toolbox/")
          ? serveDaytonaToolbox({ backend, fleet, sessions, ptys, apiKey }, req, res, ctx.url, ctx.setRoute)
          : ctx.url.pathname.startsWith("/preview/")
            ? serveDaytonaPreview({ fleet, signed }, req, res, ctx.url)
            : serveDaytonaControlPlane(control, req, res, ctx.url, ctx.setRoute),
    });
  } catch (error) {
    await backend.close().catch(() => undefined);
    throw error;
  }
  base = (options.publicUrl ?? server.url).replace(/\/+$/, "");
  const url = `${base}/api`;
  let closing: Promise<void> | undefined;
  return {
    url,
    listenUrl: server.url.replace(/\/+$/, ""),
    apiKey,
    env: { DAYTONA_API_URL: url, DAYTONA_API_KEY: apiKey, DAYTONA_TARGET: control.target },
    backend: backend.name,
    faults,
    log,
    sandboxIds: () => [...fleet.sandboxes.keys()],
    sandboxRecord: (id) => fleet.sandboxes.get(id),
    dropLogSockets: () => logStreams.dropAll(),
    close() {
      closing ??= (async () => {
        await server.close();
        await fleet.close();
        await backend.close();
      })();
      return closing;
    },
  };
}
