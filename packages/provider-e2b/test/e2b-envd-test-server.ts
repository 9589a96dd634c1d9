/**
 * A protocol-faithful local stand-in for E2B: the control-plane routes the adapter uses (on one port, the
 * SDK's `apiUrl`) and envd, the daemon inside every sandbox (on another, the SDK's `sandboxUrl`), with its
 * Connect-protocol `process.Process` and `filesystem.Filesystem` services and the `/files` endpoint. It is
 * written from E2B's public definitions (spec/envd/*.proto, spec/envd/envd.yaml, the SDK's OpenAPI types),
 * not from E2B's code. Sandboxes are temporary directories, commands are real processes of this machine.
 *
 * The SDK reaches it without its debug mode (which skips the control plane): `apiUrl` and `sandboxUrl`
 * point here, and envd requests name their sandbox in the `E2b-Sandbox-Id` header as they do through
 * E2B's shared sandbox host. A paused or gone sandbox answers 502 like E2B's proxy.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createHttpFaults, type FaultInjection } from "@sbox/conformance";
import { ConnectFailure, serveServerStream, serveUnary } from "./e2b-test-connect-protocol.js";
import { type ControlPlaneState, serveControlPlane } from "./e2b-test-control-plane.js";
import { serveFiles } from "./e2b-test-files-endpoint.js";
import type { TestSandbox } from "./e2b-test-sandbox.js";

/** Options of {@link startE2BTestServer}. */
export interface E2BTestServerOptions {
  /** The API key the control plane accepts. */
  apiKey: string;
  /** Templates that exist (default `base`). */
  templates?: readonly string[];
}

/** A running test server. */
export interface E2BTestServer {
  /** Control-plane base URL (the SDK's `apiUrl`). */
  readonly apiUrl: string;
  /** envd base URL (the SDK's `sandboxUrl`). */
  readonly sandboxUrl: string;
  /** Live sandboxes by id. */
  readonly sandboxes: ReadonlyMap<string, TestSandbox>;
  /** Every route and RPC that was called, e.g. `POST /v2/sandboxes` or `rpc process.Process/Start`. */
  readonly routes: ReadonlySet<string>;
  /** Makes the next call of `route` fail with `status` (E2B's error body). */
  failNext(route: string, status: number, message?: string): void;
  /** The conformance kit's fault-injection hook, on both the control plane and envd. */
  readonly faultInjection: FaultInjection;
  /** Kills every sandbox and stops listening. */
  close(): Promise<void>;
}

type Unary = (
  sandbox: TestSandbox,
  message: Record<string, unknown>,
  req: IncomingMessage,
) => Record<string, unknown>;
type Streaming = (
  sandbox: TestSandbox,
  message: Record<string, unknown>,
  stream: import("./e2b-test-connect-protocol.js").ServerStream,
  req: IncomingMessage,
) => Promise<void>;

const UNARY: Readonly<Record<string, Unary>> = {
  "process.Process/List": (s) => s.processes.list(),
  "process.Process/SendInput": (s, m) => s.processes.sendInput(m),
  "process.Process/SendSignal": (s, m) => s.processes.sendSignal(m),
  "process.Process/CloseStdin": (s, m) => s.processes.closeStdin(m),
  "process.Process/Update": (s, m) => s.processes.update(m),
  "filesystem.Filesystem/Stat": (s, m, req) => s.filesystem.stat(m, req.headers),
  "filesystem.Filesystem/ListDir": (s, m, req) => s.filesystem.listDir(m, req.headers),
  "filesystem.Filesystem/MakeDir": (s, m, req) => s.filesystem.makeDir(m, req.headers),
  "filesystem.Filesystem/Move": (s, m, req) => s.filesystem.move(m, req.headers),
  "filesystem.Filesystem/Remove": (s, m, req) => s.filesystem.remove(m, req.headers),
};

const STREAMING: Readonly<Record<string, Streaming>> = {
  "process.Process/Start": (s, m, stream, req) => s.processes.start(m, stream, req.headers),
  "process.Process/Connect": (s, m, stream, req) => s.processes.connect(m, stream, req.headers),
  "filesystem.Filesystem/WatchDir": (s, m, stream, req) => s.filesystem.watchDir(m, stream, req.headers),
};

function listen(server: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve(`http://127.0.0.1:${port}`);
    });
  });
}

function badGateway(res: ServerResponse, id: string | undefined): void {
  res.writeHead(502, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ sandboxId: id ?? "", message: "The sandbox was not found", code: 502 }));
}

/** Starts the control plane and envd on two free ports of 127.0.0.1. */
export async function startE2BTestServer(options: E2BTestServerOptions): Promise<E2BTestServer> {
  const sandboxes = new Map<string, TestSandbox>();
  const routes = new Set<string>();
  const failures = new Map<string, { status: number; message: string }[]>();
  const state: ControlPlaneState = {
    apiKey: options.apiKey,
    templates: new Set(options.templates ?? ["base"]),
    sandboxes,
    hit: (route) => routes.add(route),
    takeFailure: (route) => failures.get(route)?.shift(),
  };

  const injected = createHttpFaults();
  const control = createServer((req, res) => {
    if (injected.intercept(req, res)) return;
    const url = new URL(req.url ?? "/", "http://control");
    serveControlPlane(state, req, res, url).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ code: 500, message: String(error) }));
    });
  });

  const envd = createServer((req, res) => {
    if (injected.intercept(req, res)) return;
    const url = new URL(req.url ?? "/", "http://envd");
    const id = req.headers["e2b-sandbox-id"];
    const sandbox = typeof id === "string" ? sandboxes.get(id) : undefined;
    const route = url.pathname.slice(1);
    routes.add(UNARY[route] || STREAMING[route] ? `rpc ${route}` : `${req.method} ${url.pathname}`);
    if (sandbox?.state !== "running") {
      req.resume();
      return badGateway(res, typeof id === "string" ? id : undefined);
    }
    if (req.headers["x-access-token"] !== sandbox.accessToken) {
      req.resume();
      res.writeHead(401, { "Content-Type": "application/json" });
      res.end(
        JSON.stringify({ code: 401, message: "unauthorized access, please provide a valid access token" }),
      );
      return;
    }
    if (url.pathname === "/health") {
      res.writeHead(204);
      res.end();
      return;
    }
    if (url.pathname === "/files") {
      void serveFiles(req, res, url, sandbox.filesystem);
      return;
    }
    const unary = UNARY[route];
    if (unary) {
      void serveUnary(req, res, (message) => unary(sandbox, message, req));
      return;
    }
    const streaming = STREAMING[route];
    if (streaming) {
      void serveServerStream(req, res, (message, stream) => streaming(sandbox, message, stream, req));
      return;
    }
    void serveUnary(req, res, () => {
      throw new ConnectFailure("unimplemented", `${route} is not implemented by the test server`);
    });
  });

  const [apiUrl, sandboxUrl] = await Promise.all([listen(control), listen(envd)]);
  return {
    apiUrl,
    sandboxUrl,
    sandboxes,
    routes,
    faultInjection: injected.faults,
    failNext(route, status, message = `injected failure ${status}`) {
      const queue = failures.get(route) ?? [];
      queue.push({ status, message });
      failures.set(route, queue);
    },
    async close() {
      for (const sandbox of sandboxes.values()) sandbox.destroy();
      sandboxes.clear();
      control.closeAllConnections();
      envd.closeAllConnections();
      await Promise.all([
        new Promise<void>((resolve) => control.close(() => resolve())),
        new Promise<void>((resolve) => envd.close(() => resolve())),
      ]);
    },
  };
}
