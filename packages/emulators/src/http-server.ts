/**
 * Shared HTTP plumbing of every emulator: one `node:http` server per listening port, a bounded request log,
 * and fault injection — a queued rule makes matching requests stall (never answered, or answered late),
 * drop (the socket is destroyed, as a dying proxy does), fail with a status and the vendor's error body,
 * or get any answer a test wants (a redirect to another origin, a body that echoes a request header).
 *
 * Upgrade requests (WebSocket and the like) are handed to the emulator's `onUpgrade`, so vendors whose
 * clients need them (Kubernetes exec) plug in here as well; the same fault rules apply to them.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  ServerResponse,
  STATUS_CODES,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";

/** A request as fault rules and the request log see it. */
export interface RequestSummary {
  readonly method: string;
  /** Path without the query string. */
  readonly path: string;
  /** Path and query, as received. */
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
}

/** An answer a `respond` fault gives instead of the emulator's. */
export interface FaultResponse {
  status: number;
  headers?: Readonly<Record<string, string>> | undefined;
  /** A string is sent as is; anything else as JSON. */
  body?: unknown;
}

/** One fault to inject into matching requests. */
export type FaultRule = {
  /**
   * Which requests: `"POST /v1/apps/*"` style (method, then a path where `*` matches one segment and a
   * trailing `**` any rest), a regular expression tested on `"METHOD /path"`, or a predicate.
   */
  readonly match: string | RegExp | ((request: RequestSummary) => boolean);
  /** How many matching requests get the fault (default: every one until cleared). */
  readonly times?: number | undefined;
  /**
   * `"before"` (default): the emulator does nothing, as a rate limiter or a failing gateway would.
   * `"after"`: the request is carried out, then its answer is lost and the fault answers instead (for
   * `drop`, `error` and `respond`; a stall always comes first).
   */
  readonly phase?: "before" | "after" | undefined;
} & (
  | {
      /** Hold the request: never answer (until the client gives up or the server closes), or answer after `ms`. */
      readonly kind: "stall";
      readonly ms?: number | undefined;
    }
  | {
      /** Destroy the connection without an answer. */
      readonly kind: "drop";
    }
  | {
      /** Answer with `status` (default 500) and the vendor's error body for `message`. */
      readonly kind: "error";
      readonly status?: number | undefined;
      readonly message?: string | undefined;
      /** Extra headers (`Retry-After`...). */
      readonly headers?: Readonly<Record<string, string>> | undefined;
    }
  | {
      /** Answer with whatever the function returns (it sees the request, headers included). */
      readonly kind: "respond";
      readonly respond: (request: RequestSummary) => FaultResponse;
    }
);

/** Adds and clears fault rules of a running emulator. */
export interface FaultInjector {
  /** Queues a rule; rules are tried in the order they were added. */
  add(rule: FaultRule): void;
  /** Removes every rule. */
  clear(): void;
  /** Rules still in force. */
  readonly size: number;
}

/** One handled request. */
export interface RequestLogEntry {
  readonly method: string;
  readonly path: string;
  /** Path and query, as received. */
  readonly url: string;
  /** The emulator's name for the route, when it set one (for example `POST /v2/sandboxes`). */
  route?: string | undefined;
  /** Status answered, or `undefined` when the connection was dropped or is still open. */
  status?: number | undefined;
  /** Set when a fault rule handled the request. */
  fault?: FaultRule["kind"] | undefined;
  readonly at: Date;
  ms?: number | undefined;
}

/** Per-request context handed to the emulator's handler. */
export interface RequestContext {
  /** Names the route in the request log. */
  setRoute(route: string): void;
  readonly url: URL;
}

/** What {@link startHttpServer} needs. */
export interface HttpServerOptions {
  /** Name used in messages (`"e2b api"`, `"fly machines"`). */
  readonly name: string;
  readonly host: string;
  /** 0 (default) picks a free port. */
  readonly port?: number | undefined;
  /** Handles one request; a throw answers 500 with the vendor's error body. */
  readonly handler: (req: IncomingMessage, res: ServerResponse, context: RequestContext) => Promise<void>;
  /** The vendor's error body for a status and message (used by `error` faults and handler crashes). */
  readonly errorBody: (status: number, message: string) => unknown;
  /** Upgrade requests; destroyed with 501 when absent. */
  readonly onUpgrade?: ((req: IncomingMessage, socket: Socket, head: Buffer) => void) | undefined;
  /** Shared fault rules (several servers of one emulator can share one injector). */
  readonly faults?: FaultInjector | undefined;
  /** Shared log. */
  readonly log?: RequestLogEntry[] | undefined;
  /** Serve HTTPS with this key and certificate (PEM), as vendors whose clients insist on TLS need. */
  readonly tls?: { readonly key: string; readonly cert: string } | undefined;
  /**
   * How long an idle keep-alive connection stays open (default 5 000 ms). A vendor whose edge keeps
   * connections longer than clients do (so clients close first, never racing the server) sets more.
   */
  readonly keepAliveTimeoutMs?: number | undefined;
}

/** A listening server. */
export interface EmulatorHttpServer {
  /** `http://host:port` (`https://` with `tls`) */
  readonly url: string;
  readonly port: number;
  readonly faults: FaultInjector;
  /** The last {@link REQUEST_LOG_LIMIT} requests, oldest first. */
  readonly log: readonly RequestLogEntry[];
  /** Stops listening and ends every open connection (streams included). */
  close(): Promise<void>;
}

/** How many requests the log keeps. */
export const REQUEST_LOG_LIMIT = 2_000;

function globMatcher(pattern: string): (key: string) => boolean {
  const escaped = pattern
    .split(/(\*\*|\*)/)
    .map((part) =>
      part === "**" ? ".*" : part === "*" ? "[^/]*" : part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"),
    )
    .join("");
  const regex = new RegExp(`^${escaped}$`);
  return (key) => regex.test(key);
}

interface ArmedRule {
  readonly rule: FaultRule;
  remaining: number;
  readonly test: (request: RequestSummary) => boolean;
}

/** A fault injector, to share between the servers of one emulator. */
export function createFaultInjector(initial: readonly FaultRule[] = []): FaultInjector & {
  take(request: RequestSummary): FaultRule | undefined;
  /** Calls `listener` on every `clear()`: the servers end the requests a lifted stall still holds. */
  onClear(listener: () => void): void;
} {
  const rules: ArmedRule[] = [];
  const clearListeners: (() => void)[] = [];
  const arm = (rule: FaultRule): ArmedRule => {
    const { match } = rule;
    const test =
      typeof match === "function"
        ? match
        : match instanceof RegExp
          ? (r: RequestSummary) => match.test(`${r.method} ${r.path}`)
          : (
              (m) => (r: RequestSummary) =>
                m(`${r.method} ${r.path}`)
            )(globMatcher(match));
    if (rule.times !== undefined && !(Number.isInteger(rule.times) && rule.times > 0)) {
      throw new TypeError(`a fault rule's times must be a positive integer, got ${String(rule.times)}`);
    }
    return { rule, remaining: rule.times ?? Number.POSITIVE_INFINITY, test };
  };
  for (const rule of initial) rules.push(arm(rule));
  return {
    add(rule) {
      rules.push(arm(rule));
    },
    clear() {
      rules.length = 0;
      for (const listener of clearListeners) listener();
    },
    onClear(listener) {
      clearListeners.push(listener);
    },
    get size() {
      return rules.length;
    },
    take(request) {
      const index = rules.findIndex((armed) => armed.test(request));
      if (index < 0) return undefined;
      const armed = rules[index]!;
      armed.remaining -= 1;
      if (armed.remaining <= 0) rules.splice(index, 1);
      return armed.rule;
    },
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": typeof body === "string" ? "text/plain; charset=utf-8" : "application/json",
    ...headers,
  });
  res.end(text);
}

/** A raw HTTP/1.1 answer on an upgrade's socket (no ServerResponse exists for an upgrade). */
export function rawAnswer(
  socket: Socket,
  status: number,
  headers: Readonly<Record<string, string>>,
  body: unknown,
): void {
  const text = body === undefined ? "" : typeof body === "string" ? body : JSON.stringify(body);
  const all: Record<string, string> = {
    "Content-Type": typeof body === "string" ? "text/plain; charset=utf-8" : "application/json",
    "Content-Length": String(Buffer.byteLength(text)),
    Connection: "close",
    ...headers,
  };
  const head = Object.entries(all)
    .map(([name, value]) => `${name}: ${value.replace(/[\r\n]/g, " ")}`)
    .join("\r\n");
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Unknown"}\r\n${head}\r\n\r\n${text}`);
}

/** An upgrade request under a fault: stalled, dropped, or answered as the fault says. */
function answerUpgradeFault(
  socket: Socket,
  fault: FaultRule,
  summary: RequestSummary,
  options: HttpServerOptions,
  proceed: () => void,
  stalledSockets: Set<Socket>,
): void {
  if (fault.kind === "stall") {
    stalledSockets.add(socket);
    socket.on("close", () => stalledSockets.delete(socket));
    if (fault.ms !== undefined) {
      setTimeout(() => {
        stalledSockets.delete(socket);
        if (!socket.destroyed) proceed();
      }, fault.ms).unref();
    }
    return;
  }
  if (fault.kind === "drop") {
    socket.destroy();
    return;
  }
  if (fault.kind === "error") {
    const status = fault.status ?? 500;
    rawAnswer(
      socket,
      status,
      fault.headers ?? {},
      options.errorBody(status, fault.message ?? `injected failure ${status}`),
    );
    return;
  }
  const answer = fault.respond(summary);
  rawAnswer(socket, answer.status, answer.headers ?? {}, answer.body ?? "");
}

/** Starts one HTTP server on `host:port`. */
export async function startHttpServer(options: HttpServerOptions): Promise<EmulatorHttpServer> {
  const faults = (options.faults ?? createFaultInjector()) as ReturnType<typeof createFaultInjector>;
  const log = options.log ?? [];
  const stalled = new Set<ServerResponse>();
  // Lifting the faults ends the requests a stall holds: the client sees its connection close, as it
  // would when a hung proxy finally gives up, instead of waiting for the server to shut down.
  const stalledSockets = new Set<Socket>();
  faults.onClear(() => {
    for (const res of stalled) res.destroy();
    stalled.clear();
    for (const socket of stalledSockets) socket.destroy();
    stalledSockets.clear();
  });
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://emulator");
    const entry: RequestLogEntry = {
      method: req.method ?? "GET",
      path: url.pathname,
      url: req.url ?? "/",
      at: new Date(),
    };
    log.push(entry);
    if (log.length > REQUEST_LOG_LIMIT) log.splice(0, log.length - REQUEST_LOG_LIMIT);
    const started = Date.now();
    res.on("finish", () => {
      entry.status = res.statusCode;
      entry.ms = Date.now() - started;
    });
    const summary: RequestSummary = {
      method: entry.method,
      path: url.pathname,
      url: req.url ?? "/",
      headers: req.headers,
    };
    const fault = faults.take(summary);
    const answerFault = (rule: FaultRule) => {
      if (rule.kind === "drop") {
        req.socket.destroy();
        return;
      }
      if (rule.kind === "error") {
        const status = rule.status ?? 500;
        sendJson(res, status, options.errorBody(status, rule.message ?? `injected failure ${status}`), {
          ...(rule.headers ?? {}),
        });
        return;
      }
      if (rule.kind === "respond") {
        const answer = rule.respond(summary);
        sendJson(res, answer.status, answer.body ?? "", { ...(answer.headers ?? {}) });
      }
    };
    if (fault) {
      entry.fault = fault.kind;
      if (fault.kind === "stall") {
        stalled.add(res);
        res.on("close", () => stalled.delete(res));
        if (fault.ms === undefined) {
          req.resume();
          return;
        }
        setTimeout(() => {
          stalled.delete(res);
          if (!res.destroyed) void run(res);
        }, fault.ms).unref();
        return;
      }
      if (fault.phase === "after") {
        // The work is done against a response nobody receives; then the fault answers.
        const shadow = new ServerResponse(req);
        void run(shadow).then(() => answerFault(fault));
        return;
      }
      req.resume();
      answerFault(fault);
      return;
    }
    void run(res);

    async function run(target: ServerResponse): Promise<void> {
      try {
        await options.handler(req, target, {
          url,
          setRoute(route) {
            entry.route = route;
          },
        });
      } catch (error) {
        req.resume();
        const message = error instanceof Error ? error.message : String(error);
        sendJson(target, 500, options.errorBody(500, `${options.name}: ${message}`));
      }
    }
  };
  const server: Server = options.tls
    ? (createHttpsServer({ key: options.tls.key, cert: options.tls.cert }, onRequest) as unknown as Server)
    : createServer(onRequest);
  server.on("upgrade", (req, socket: Socket, head) => {
    // Upgrades (WebSocket, SPDY streams) meet the same faults as plain requests: a stalled API server
    // does not answer a handshake either, and an echoing or redirecting one answers it the same way.
    const url = new URL(req.url ?? "/", "http://emulator");
    const summary: RequestSummary = {
      method: req.method ?? "GET",
      path: url.pathname,
      url: req.url ?? "/",
      headers: req.headers,
    };
    const fault = faults.take(summary);
    if (fault) {
      log.push({
        method: summary.method,
        path: summary.path,
        url: summary.url,
        fault: fault.kind,
        at: new Date(),
      });
      if (log.length > REQUEST_LOG_LIMIT) log.splice(0, log.length - REQUEST_LOG_LIMIT);
      answerUpgradeFault(
        socket,
        fault,
        summary,
        options,
        () => {
          if (options.onUpgrade) options.onUpgrade(req, socket, head);
          else socket.destroy();
        },
        stalledSockets,
      );
      return;
    }
    if (options.onUpgrade) {
      options.onUpgrade(req, socket, head);
      return;
    }
    socket.end("HTTP/1.1 501 Not Implemented\r\nConnection: close\r\n\r\n");
  });
  // Long streams (process output, /wait) must not be cut by Node's default request timeout.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const hostForUrl = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `${options.tls ? "https" : "http"}://${hostForUrl}:${port}`,
    port,
    faults,
    log,
    async close() {
      for (const res of stalled) res.destroy();
      stalled.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** What differs between the servers of one emulator. */
export type EmulatorServerSpec = Pick<HttpServerOptions, "name" | "port" | "handler">;

/**
 * Starts an emulator's servers in order, each with `common` (host, faults, log, error body), pushing each
 * into `servers` as it listens. When one fails to start, those already listening are closed, `cleanup` runs
 * (the emulator's backend), and the error is thrown: a failed start leaves nothing open.
 */
export async function startHttpServers(
  common: Omit<HttpServerOptions, "name" | "port" | "handler">,
  specs: readonly EmulatorServerSpec[],
  servers: EmulatorHttpServer[],
  cleanup: () => Promise<unknown>,
): Promise<void> {
  try {
    for (const spec of specs) servers.push(await startHttpServer({ ...common, ...spec }));
  } catch (error) {
    await Promise.allSettled(servers.map((server) => server.close()));
    await cleanup().catch(() => undefined);
    throw error;
  }
}

/** Reads a whole request body, refusing more than `limit` bytes (413-worthy input ends the read). */
export async function readBody(req: IncomingMessage, limit: number = 64 * 1024 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).byteLength;
    if (size > limit) throw new BodyTooLargeError(limit);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Thrown by {@link readBody} when a body is larger than allowed. */
export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`request body larger than ${limit} bytes`);
  }
}

/** Reads a JSON object body: `{}` when empty, `undefined` when it is not a JSON object. */
export async function readJsonObject(
  req: IncomingMessage,
  limit?: number,
): Promise<Record<string, unknown> | undefined> {
  const body = await readBody(req, limit);
  if (body.byteLength === 0) return {};
  try {
    const value = JSON.parse(body.toString("utf8")) as unknown;
    if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
    return value as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Answers JSON (or no body for 204 and `undefined`). */
export function sendJsonResponse(
  res: ServerResponse,
  status: number,
  body?: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  if (body === undefined) {
    res.writeHead(status, headers);
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}
