/**
 * Traffic to sandboxes, as E2B's sandbox proxy routes it: by host (`<port>-<id>.<domain>`, the public URL
 * form) or by the `E2b-Sandbox-Id` / `E2b-Sandbox-Port` headers (the stable `sandbox.<domain>` host the SDK
 * uses). Port 49983 is envd — its Connect services, `/files`, `/health`, `/envs`, `/metrics` — any other
 * port goes to the sandbox's own servers. A `/files` URL without either (an SDK configured with
 * `E2B_SANDBOX_URL` signs URLs without naming the sandbox) is routed by its signature, which only the
 * sandbox's own access token can produce.
 *
 * A killed or unknown sandbox is 502; a paused one is 502 too unless it auto-resumes, in which case the
 * request wakes it first.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  ConnectFailure,
  type ConnectMessage,
  type ServerStream,
  serveClientStream,
  serveServerStream,
  serveUnary,
} from "./e2b-connect-protocol.js";
import { DEFAULT_TIMEOUT_S } from "./e2b-control-plane.js";
import { serveFiles } from "./e2b-envd-files.js";
import { proxyToPort } from "./e2b-port-proxy.js";
import { sandboxNotFound } from "./e2b-proxy-errors.js";
import type { E2BSandbox } from "./e2b-sandbox.js";
import { fileUrlParameters, signatureMatches } from "./e2b-signatures.js";
import type { E2BEmulatorState } from "./e2b-state.js";

/** envd's port inside every sandbox. */
export const ENVD_PORT = 49983;

type Unary = (
  sandbox: E2BSandbox,
  message: ConnectMessage,
  req: IncomingMessage,
) => Promise<ConnectMessage> | ConnectMessage;
type Streaming = (
  sandbox: E2BSandbox,
  message: ConnectMessage,
  stream: ServerStream,
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
  "filesystem.Filesystem/CreateWatcher": (s, m, req) => s.filesystem.createWatcher(m, req.headers),
  "filesystem.Filesystem/GetWatcherEvents": (s, m) => s.filesystem.getWatcherEvents(m),
  "filesystem.Filesystem/RemoveWatcher": (s, m) => s.filesystem.removeWatcher(m),
};

const STREAMING: Readonly<Record<string, Streaming>> = {
  "process.Process/Start": (s, m, stream, req) => s.processes.start(m, stream, req.headers),
  "process.Process/Connect": (s, m, stream, req) => s.processes.connect(m, stream, req.headers),
  "filesystem.Filesystem/WatchDir": (s, m, stream, req) => s.filesystem.watchDir(m, stream, req.headers),
};

/** Routes that envd serves without its access token. */
const OPEN_ROUTES = new Set(["GET /health", "GET /files", "POST /files"]);

/** Where a request is going. */
interface Target {
  readonly sandboxId: string | undefined;
  readonly port: number;
  readonly host: string;
  /** Why an unroutable request is refused, when the emulator can say better than "no such sandbox". */
  readonly refusal?: { status: number; message: string } | undefined;
}

/** The path form of a sandbox port's URL: `/ports/<port>-<id>/<path>` (see {@link portUrlPath}). */
const PORT_PATH = /^\/ports\/(\d+)-([a-z0-9]+)(\/.*)?$/;

/**
 * The path under which the sandbox server answers for `port` of `sandboxId` as if reached at
 * `<port>-<id>.<domain>`: for clients that cannot resolve the per-port host names (Node's `fetch` does
 * not resolve `*.localhost`), and that need no TLS.
 */
export function portUrlPath(sandboxId: string, port: number): string {
  return `/ports/${port}-${sandboxId}`;
}

function targetOf(state: E2BEmulatorState, req: IncomingMessage, url: URL): Target {
  const byPath = PORT_PATH.exec(url.pathname);
  if (byPath) {
    // The sandbox's server sees the request as it would at its public host.
    req.url = `${byPath[3] ?? "/"}${url.search}`;
    return {
      sandboxId: byPath[2],
      port: Number(byPath[1]),
      host: `${byPath[1]}-${byPath[2]}.${state.domain}`,
    };
  }
  const host = String(req.headers.host ?? "");
  const name = host.replace(/:\d+$/, "");
  const match = /^(\d+)-([a-z0-9]+)\.(.+)$/.exec(name);
  if (match && (state.domain === null || match[3] === state.domain)) {
    return { sandboxId: match[2], port: Number(match[1]), host };
  }
  const id = req.headers["e2b-sandbox-id"];
  const port = Number(req.headers["e2b-sandbox-port"] ?? ENVD_PORT);
  if (typeof id === "string" && id !== "") return { sandboxId: id, port, host };
  if (url.pathname === "/files") {
    const params = fileUrlParameters(url);
    const operation = req.method === "POST" ? "write" : "read";
    for (const sandbox of state.sandboxes.values()) {
      if (sandbox.envdAccessToken && signatureMatches(params, operation, sandbox.envdAccessToken)) {
        return { sandboxId: sandbox.id, port: ENVD_PORT, host };
      }
    }
    // E2B_SANDBOX_URL names one envd: an unsigned URL goes to the only sandbox there is, or else to the
    // only one that takes unsigned URLs (a secure sandbox then answers "missing signature" itself).
    const live = [...state.sandboxes.values()].filter((sandbox) => !sandbox.killed);
    const open = live.filter((sandbox) => !sandbox.envdAccessToken);
    const only = live.length === 1 ? live[0] : open.length === 1 ? open[0] : undefined;
    if (params.signature === undefined && only) return { sandboxId: only.id, port: ENVD_PORT, host };
    return {
      sandboxId: undefined,
      port: ENVD_PORT,
      host,
      refusal:
        params.signature !== undefined
          ? { status: 401, message: "invalid signature" }
          : {
              status: 502,
              message: `this /files URL names no sandbox and ${open.length} sandboxes take unsigned URLs: use the per-sandbox host (<port>-<id>.${state.domain}), the E2b-Sandbox-Id header or the path form /ports/49983-<id>/files`,
            },
    };
  }
  return { sandboxId: undefined, port: ENVD_PORT, host };
}

/** Handles one request on the sandbox side of the emulator. */
export async function serveSandboxTraffic(
  state: E2BEmulatorState,
  req: IncomingMessage,
  res: ServerResponse,
  received: URL,
  setRoute: (route: string) => void,
): Promise<void> {
  const target = targetOf(state, req, received);
  // The path form rewrote req.url to the path the sandbox sees.
  const url = new URL(req.url ?? "/", received);
  const sandbox = target.sandboxId === undefined ? undefined : state.sandboxes.get(target.sandboxId);
  const rpc = url.pathname.slice(1);
  setRoute(
    target.port !== ENVD_PORT
      ? `${req.method} :{port}${url.pathname}`
      : UNARY[rpc] || STREAMING[rpc] || rpc === "process.Process/StreamInput"
        ? `rpc ${rpc}`
        : `${req.method} ${url.pathname}`,
  );
  if (!sandbox || sandbox.killed) {
    req.resume();
    if (target.refusal) return jsonError(res, target.refusal.status, target.refusal.message);
    return sandboxNotFound(res, target.sandboxId ?? "", target.host);
  }
  if (sandbox.state === "paused") {
    if (!(sandbox.lifecycle.autoResume && sandbox.pausedWith === "memory")) {
      req.resume();
      return sandboxNotFound(res, sandbox.id, target.host);
    }
    await sandbox.resume(DEFAULT_TIMEOUT_S * 1000);
  }
  if (target.port !== ENVD_PORT) return proxyToPort(sandbox, target.port, req, res, target.host);
  return serveEnvd(state, sandbox, req, res, url);
}

function jsonError(res: ServerResponse, code: number, message: string): void {
  res.writeHead(code, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ code, message }));
}

async function serveEnvd(
  state: E2BEmulatorState,
  sandbox: E2BSandbox,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const method = req.method ?? "GET";
  const key = `${method} ${url.pathname}`;
  if (
    sandbox.envdAccessToken &&
    !OPEN_ROUTES.has(key) &&
    req.headers["x-access-token"] !== sandbox.envdAccessToken
  ) {
    req.resume();
    return jsonError(
      res,
      401,
      "unauthorized access, please provide a valid access token or method signing if supported",
    );
  }
  if (key === "GET /health") {
    req.resume();
    res.writeHead(204);
    res.end();
    return;
  }
  if (url.pathname === "/files") {
    return serveFiles(
      { machine: sandbox.machine, accessToken: sandbox.envdAccessToken, now: () => state.clock.now() },
      req,
      res,
      url,
    );
  }
  if (key === "GET /envs") {
    req.resume();
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(sandbox.envVars));
    return;
  }
  if (key === "GET /metrics") {
    req.resume();
    const sample = await state.sampleMetrics(sandbox);
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(
      JSON.stringify({
        ts: sample.timestampUnix,
        cpu_count: sample.cpuCount,
        cpu_used_pct: sample.cpuUsedPct,
        mem_total: sample.memTotal,
        mem_used: sample.memUsed,
        mem_cache: sample.memCache,
        disk_used: sample.diskUsed,
        disk_total: sample.diskTotal,
      }),
    );
    return;
  }
  const rpc = url.pathname.slice(1);
  const unary = UNARY[rpc];
  if (unary && method === "POST") return serveUnary(req, res, (message) => unary(sandbox, message, req));
  const streaming = STREAMING[rpc];
  if (streaming && method === "POST") {
    return serveServerStream(req, res, (message, stream) => streaming(sandbox, message, stream, req));
  }
  if (rpc === "process.Process/StreamInput" && method === "POST") {
    return serveClientStream(req, res, sandbox.processes.streamInput());
  }
  if (rpc.includes("/") && (rpc.startsWith("process.") || rpc.startsWith("filesystem."))) {
    return serveUnary(req, res, () => {
      throw new ConnectFailure("unimplemented", `${rpc} is not implemented`);
    });
  }
  req.resume();
  // envd's control routes (/init, /snapshot...) are not reachable through the public proxy either.
  jsonError(res, 404, `route ${key} not found`);
}
