/**
 * Streamable HTTP (stateful sessions) for the MCP server. Bound to 127.0.0.1 by default; any other bind
 * needs a bearer token, or the server refuses to start. No CORS headers are ever sent; a request from a
 * browser origin that is not allowed, or with a Host that is not the server's (DNS rebinding), is refused.
 * A session ends on DELETE, on `close()`, or after `sessionIdleMs` without a request in progress.
 */
import { randomUUID, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { SandboxError } from "@sbox/core";
import type { McpSandboxSession } from "./mcp-session.js";
import type { SandboxMcpServer } from "./sandbox-mcp-server.js";

/** Options of {@link serveStreamableHttp}. */
export interface HttpServeOptions {
  /** Address to bind (default `127.0.0.1`). Anything but loopback requires `token`. */
  host?: string | undefined;
  /** Port (default 0: any free port). */
  port?: number | undefined;
  /** Bearer token every request must carry (`Authorization: Bearer <token>`). */
  token?: string | undefined;
  /** Browser origins allowed to call (default none: CORS off, requests with an Origin header are refused). */
  allowedOrigins?: readonly string[] | undefined;
  /** Path of the endpoint (default `/mcp`). */
  path?: string | undefined;
  /** A session with no request in progress for this long ends (default 15 minutes). */
  sessionIdleMs?: number | undefined;
  /** Sessions open at once (default 32); more are refused with 503. */
  maxSessions?: number | undefined;
}

/** A running HTTP endpoint. */
export interface HttpServing {
  /** The endpoint's URL, e.g. `http://127.0.0.1:7340/mcp`. */
  readonly url: string;
  /** Ends every session and stops listening. */
  close(): Promise<void>;
}

/** True for 127.0.0.0/8, ::1 and localhost. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "").toLowerCase();
  return bare === "localhost" || bare === "::1" || /^127(\.\d{1,3}){3}$/.test(bare);
}

function tokenMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer (.+)$/i.exec(header ?? "");
  if (!match) return false;
  const given = Buffer.from(match[1]!, "utf8");
  const expected = Buffer.from(token, "utf8");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function refuse(
  response: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, { "content-type": "application/json", ...headers });
  response.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}

interface HttpSession {
  readonly transport: StreamableHTTPServerTransport;
  session: McpSandboxSession | undefined;
  active: number;
  timer: NodeJS.Timeout | undefined;
}

/** Serves the MCP server over streamable HTTP. Rejects with `Validation` for an unsafe configuration. */
export async function serveStreamableHttp(
  server: SandboxMcpServer,
  options: HttpServeOptions = {},
): Promise<HttpServing> {
  const host = options.host ?? "127.0.0.1";
  const path = options.path ?? "/mcp";
  const idleMs = options.sessionIdleMs ?? 15 * 60_000;
  const maxSessions = options.maxSessions ?? 32;
  const token = options.token;
  if (token !== undefined && (token.length < 16 || /\s/.test(token))) {
    throw new SandboxError("Validation", "the bearer token must be at least 16 characters without spaces");
  }
  if (!isLoopbackHost(host) && token === undefined) {
    throw new SandboxError(
      "Validation",
      `refusing to serve MCP on ${host} without a bearer token: anyone who reaches it could run commands. Set a token, or bind 127.0.0.1`,
    );
  }
  const allowedOrigins = new Set(options.allowedOrigins ?? []);
  const sessions = new Map<string, HttpSession>();
  let allowedHosts: Set<string> | undefined;

  const touch = (entry: HttpSession) => {
    clearTimeout(entry.timer);
    if (entry.active > 0) return;
    entry.timer = setTimeout(() => void entry.transport.close(), idleMs);
    entry.timer.unref?.();
  };

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", "http://placeholder");
    if (url.pathname !== path) return refuse(response, 404, "not found");
    if (allowedHosts && !allowedHosts.has((request.headers.host ?? "").toLowerCase())) {
      return refuse(response, 403, "host not allowed");
    }
    const origin = request.headers.origin;
    if (origin !== undefined && !allowedOrigins.has(origin))
      return refuse(response, 403, "origin not allowed");
    if (token !== undefined && !tokenMatches(request.headers.authorization, token)) {
      return refuse(response, 401, "a valid bearer token is required", {
        "www-authenticate": 'Bearer realm="sbox-mcp"',
      });
    }
    const sessionId = request.headers["mcp-session-id"];
    if (typeof sessionId === "string") {
      const entry = sessions.get(sessionId);
      if (!entry) return refuse(response, 404, "unknown or ended session");
      entry.active++;
      clearTimeout(entry.timer);
      try {
        await entry.transport.handleRequest(request, response);
      } finally {
        // A streamed response (SSE) may outlive handleRequest: the session is active until it closes.
        const done = () => {
          entry.active--;
          touch(entry);
        };
        if (response.writableEnded || response.destroyed) done();
        else response.once("close", done);
      }
      return;
    }
    if (request.method !== "POST") return refuse(response, 400, "a session id is required");
    const body = await readJson(request).catch(() => undefined);
    if (body === undefined || !isInitializeRequest(body))
      return refuse(response, 400, "the first request of a session must be initialize");
    if (sessions.size >= maxSessions) return refuse(response, 503, `at most ${maxSessions} sessions at once`);
    const entry: HttpSession = {
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, entry);
        },
      }),
      session: undefined,
      active: 1,
      timer: undefined,
    };
    const previous = entry.transport.onclose;
    entry.transport.onclose = () => {
      previous?.();
      clearTimeout(entry.timer);
      if (entry.transport.sessionId) sessions.delete(entry.transport.sessionId);
    };
    entry.session = await server.connect(entry.transport);
    try {
      await entry.transport.handleRequest(request, response, body);
    } finally {
      entry.active--;
      touch(entry);
    }
  };

  const http = createServer((request, response) => {
    handle(request, response).catch(() => {
      if (!response.headersSent) refuse(response, 500, "internal error");
      else response.end();
    });
  });
  http.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(options.port ?? 0, host, () => {
      http.off("error", reject);
      resolve();
    });
  });
  const { port } = http.address() as AddressInfo;
  const hostInUrl = host.includes(":") ? `[${host}]` : host;
  if (isLoopbackHost(host)) {
    // Only the names of this loopback endpoint are accepted as Host: a page served elsewhere that resolves
    // its own name to 127.0.0.1 (DNS rebinding) is refused.
    allowedHosts = new Set([
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `[::1]:${port}`,
      `${hostInUrl}:${port}`,
    ]);
  }
  return {
    url: `http://${hostInUrl}:${port}${path}`,
    async close() {
      await Promise.all(
        [...sessions.values()].map((entry) => entry.transport.close().catch(() => undefined)),
      );
      await Promise.all([...server.sessions].map((session) => session.end("the HTTP server closed")));
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > 4 * 1024 * 1024) throw new Error("body too large");
    chunks.push(chunk as Buffer);
  }
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}
