/**
 * Shared set-up of the tests: the Fly Machines emulator of `@sbox/emulators` (every machine a real sandbox
 * of provider-local) and providers pointed at it. Retries are fast here so that retry tests take
 * milliseconds, not seconds. The helpers name the emulator's routes the way these tests talk about them
 * (`create`, `wait`, `exec`...) and turn its fault injection into one-line failures.
 */
import type { AnyCapabilities, Sandbox } from "@sbox/core";
import { type FlyEmulator, type FlyEmulatorOptions, startFlyEmulator } from "@sbox/emulators/fly";
import type { FlyProviderOptions } from "../src/index.js";
import { fly } from "../src/index.js";

/** The routes these tests talk about. */
export type FlyTestRoute =
  | "list"
  | "create"
  | "get"
  | "wait"
  | "exec"
  | "stop"
  | "suspend"
  | "start"
  | "delete"
  | "lease"
  | "unknown";

/** One request the emulator answered. */
export interface FlyTestRequest {
  route: FlyTestRoute;
  method: string;
  path: string;
  query: string;
  status: number | undefined;
  machineId?: string | undefined;
}

/** A failure to answer instead of (or after) carrying out a request. */
export interface FlyTestFault {
  route: FlyTestRoute;
  status: number;
  /** How many requests it applies to (default 1). */
  times?: number;
  /** Response body (default `{"error": "injected <status>"}`). */
  body?: string;
  /** `Retry-After` header value. */
  retryAfter?: string;
  /** `"before"` (default): nothing is done; `"after"`: the request is carried out, its answer lost. */
  phase?: "before" | "after";
}

/** The emulator and the helpers the tests use. */
export interface FlyTestServer {
  readonly emulator: FlyEmulator;
  readonly url: string;
  /** The accepted token, as `fly tokens create` prints it (`FlyV1 fm2_…`). */
  readonly token: string;
  readonly app: string;
  /** Every request answered, in order. */
  readonly requests: FlyTestRequest[];
  proxyUrl(app: string, port: number): string;
  fail(fault: FlyTestFault): void;
  clearFaults(): void;
  hangBoots(hang: boolean): void;
  /** Ids of machines that exist and are not destroyed. */
  machineIds(): string[];
  /** The backend sandbox of a machine, to check its processes and files from inside. */
  machineSandbox(id: string): Sandbox<AnyCapabilities> | undefined;
  close(): Promise<void>;
}

const MACHINE_PATH = /^\/v1\/apps\/[^/]+\/machines(?:\/([^/]+))?(?:\/([a-z]+))?$/;

/** The test name of a request. */
export function routeOf(
  method: string,
  path: string,
): { route: FlyTestRoute; machineId?: string | undefined } {
  const match = MACHINE_PATH.exec(path);
  if (!match) return { route: "unknown" };
  const [, id, action] = match;
  if (id === undefined)
    return { route: method === "GET" ? "list" : method === "POST" ? "create" : "unknown" };
  if (action === undefined) {
    return { route: method === "GET" ? "get" : method === "DELETE" ? "delete" : "unknown", machineId: id };
  }
  const known: FlyTestRoute[] = ["wait", "exec", "stop", "suspend", "start", "lease"];
  return {
    route: known.includes(action as FlyTestRoute) ? (action as FlyTestRoute) : "unknown",
    machineId: id,
  };
}

/** Starts an emulator for one test file. */
export async function startFlyTestServer(options: FlyEmulatorOptions = {}): Promise<FlyTestServer> {
  const emulator = await startFlyEmulator({
    apps: ["sbox-fly-test"],
    destroyedLingerMs: 5_000,
    // SBOX_EMULATOR_BACKEND=docker runs the machines as containers instead of provider-local sandboxes.
    ...(process.env.SBOX_EMULATOR_BACKEND === "docker" ? { backend: "docker" as const } : {}),
    ...options,
  });
  return {
    emulator,
    url: emulator.url,
    token: emulator.token,
    app: emulator.app,
    get requests() {
      return emulator.log.map((entry) => {
        const { route, machineId } = routeOf(entry.method, entry.path);
        const at = entry.url.indexOf("?");
        return {
          route,
          method: entry.method,
          path: entry.path,
          query: at < 0 ? "" : entry.url.slice(at),
          status: entry.status,
          machineId,
        };
      });
    },
    proxyUrl: (app, port) => `${emulator.proxyUrl}/${encodeURIComponent(app)}/${port}`,
    fail(fault) {
      emulator.faults.add({
        match: (request) => routeOf(request.method, request.path).route === fault.route,
        times: fault.times ?? 1,
        phase: fault.phase ?? "before",
        kind: "respond",
        respond: () => ({
          status: fault.status,
          body: fault.body ?? JSON.stringify({ error: `injected ${fault.status}` }),
          headers: {
            "Content-Type": "application/json",
            ...(fault.retryAfter === undefined ? {} : { "Retry-After": fault.retryAfter }),
          },
        }),
      });
    },
    clearFaults: () => emulator.faults.clear(),
    hangBoots: (hang) => emulator.holdBoots(hang),
    machineIds: () =>
      emulator.machineIds().filter((id) => {
        const state = emulator.machineState(id);
        return state !== undefined && state !== "destroyed" && state !== "destroying";
      }),
    machineSandbox: (id) => emulator.machineSandbox(id),
    close: () => emulator.close(),
  };
}

/** A provider talking to `server` with its token and app; `overrides` win. */
export function testProvider(
  server: FlyTestServer,
  overrides: FlyProviderOptions = {},
): ReturnType<typeof fly> {
  return fly({
    apiToken: server.token,
    appName: server.app,
    apiBaseUrl: server.url,
    image: "registry-1.docker.io/library/alpine:3.20",
    retry: { retries: 3, baseDelayMs: 5, maxDelayMs: 20 },
    previewUrl: ({ app, port }) => server.proxyUrl(app, port),
    ...overrides,
  });
}

/** True when a process whose command line contains `needle` runs inside the machine. */
export async function machineRuns(server: FlyTestServer, id: string, needle: string): Promise<boolean> {
  const sandbox = server.machineSandbox(id);
  if (!sandbox) return false;
  const script = `for d in /proc/[0-9]*; do tr "\\000" " " < "$d/cmdline" 2>/dev/null; echo; done`;
  let output = "";
  try {
    output = (await sandbox.commands.run(["sh", "-c", script])).stdout;
  } catch {
    return false; // a stopped or destroyed sandbox runs nothing
  }
  return output.split("\n").some((line) => line.includes(needle) && !line.includes("/proc/[0-9]"));
}
