/**
 * E2B's public sandbox URLs (`https://<port>-<id>.<domain>`): requests for a port other than envd's reach
 * whatever listens on that port inside the sandbox, through the backend's own way in (`ports.expose`,
 * else `ports.fetch`). The Host header is kept (or replaced by `maskRequestHost`, `${PORT}` filled in),
 * a secured sandbox wants its traffic token, and a port nobody listens on is answered like E2B's proxy.
 */
import { type IncomingMessage, request as httpRequest, type ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { portClosed, trafficTokenRefused } from "./e2b-proxy-errors.js";
import type { E2BSandbox } from "./e2b-sandbox.js";

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

function forwardHeaders(req: IncomingMessage, host: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    if (name === "e2b-traffic-access-token" || name === "e2b-sandbox-id" || name === "e2b-sandbox-port") continue;
    out[name] = value;
  }
  out.host = host;
  return out;
}

/** Forwards one request to `port` of the sandbox. */
export async function proxyToPort(
  sandbox: E2BSandbox,
  port: number,
  req: IncomingMessage,
  res: ServerResponse,
  publicHost: string,
): Promise<void> {
  if (sandbox.trafficAccessToken) {
    const token = req.headers["e2b-traffic-access-token"];
    if (token !== sandbox.trafficAccessToken) {
      req.resume();
      return trafficTokenRefused(res, sandbox.id, publicHost, token === undefined);
    }
  }
  const mask = sandbox.network.maskRequestHost;
  const host = mask ? mask.replaceAll("${PORT}", String(port)) : publicHost;
  const ports = sandbox.backend.ports;
  if (!ports) {
    req.resume();
    return portClosed(res, sandbox.id, publicHost, port);
  }
  let target: URL | undefined;
  try {
    target = new URL((await ports.expose(port)).url);
  } catch {
    target = undefined;
  }
  if (target && target.protocol === "http:") {
    await new Promise<void>((resolve) => {
      const upstream = httpRequest(
        {
          host: target.hostname,
          port: target.port || 80,
          method: req.method,
          path: req.url ?? "/",
          headers: forwardHeaders(req, host),
        },
        (answer) => {
          const headers: Record<string, string | string[]> = {};
          for (const [name, value] of Object.entries(answer.headers)) {
            if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
          }
          res.writeHead(answer.statusCode ?? 502, headers);
          answer.pipe(res);
          answer.on("end", resolve);
          answer.on("error", () => {
            res.destroy();
            resolve();
          });
        },
      );
      upstream.on("error", () => {
        req.resume();
        portClosed(res, sandbox.id, publicHost, port);
        resolve();
      });
      req.pipe(upstream);
    });
    return;
  }
  // No URL the emulator can reach: go through the backend's own fetch.
  try {
    const body = req.method === "GET" || req.method === "HEAD" ? undefined : (Readable.toWeb(req) as ReadableStream);
    const answer = await ports.fetch(port, req.url ?? "/", {
      method: req.method ?? "GET",
      headers: forwardHeaders(req, host) as Record<string, string>,
      ...(body ? { body, duplex: "half" } : {}),
      redirect: "manual",
    } as RequestInit);
    const headers: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      if (!HOP_BY_HOP.has(name)) headers[name] = value;
    });
    res.writeHead(answer.status, headers);
    if (answer.body) Readable.fromWeb(answer.body as import("node:stream/web").ReadableStream).pipe(res);
    else res.end();
  } catch {
    req.resume();
    portClosed(res, sandbox.id, publicHost, port);
  }
}
