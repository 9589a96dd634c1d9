/**
 * E2B's public sandbox URLs (`https://<port>-<id>.<domain>`): requests for a port other than envd's reach
 * whatever listens on that port inside the sandbox, through the backend's own way in (`ports.expose`,
 * else `ports.fetch`). The Host header is kept (or replaced by `maskRequestHost`, `${PORT}` filled in),
 * a secured sandbox wants its traffic token, and a port nobody listens on is answered like E2B's proxy.
 */
import { type IncomingMessage, request as httpRequest, type ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { HelperFailure } from "./e2b-machine.js";
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
  let target: URL | undefined;
  try {
    target = ports ? new URL((await ports.expose(port)).url) : undefined;
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
  // No URL the emulator can reach (Docker publishes only ports declared at create): one exchange through
  // a relay inside the sandbox.
  await relay(sandbox, port, req, res, forwardHeaders(req, host), publicHost);
}

/** Splits a raw HTTP answer head into status and headers. */
function parseHead(head: string): { status: number; headers: Record<string, string[]> } | undefined {
  const lines = head.split("\r\n");
  const status = /^HTTP\/\d(?:\.\d)? (\d{3})/.exec(lines[0] ?? "");
  if (!status) return undefined;
  const headers: Record<string, string[]> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (HOP_BY_HOP.has(name)) continue;
    (headers[name] ??= []).push(line.slice(colon + 1).trim());
  }
  return { status: Number(status[1]), headers };
}

/**
 * One HTTP/1.0 exchange through the envd helper's relay: the request is written to a socket opened inside
 * the sandbox, the answer read back until the server closes it (HTTP/1.0 servers answer without chunking
 * and close at the end, so the body needs no re-framing).
 */
async function relay(
  sandbox: E2BSandbox,
  port: number,
  req: IncomingMessage,
  res: ServerResponse,
  headers: Record<string, string | string[]>,
  publicHost: string,
): Promise<void> {
  const lines = [`${req.method ?? "GET"} ${req.url ?? "/"} HTTP/1.0`];
  for (const [name, value] of Object.entries(headers)) {
    for (const one of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${one}`);
  }
  lines.push("connection: close", "", "");
  const head = Buffer.from(lines.join("\r\n"), "latin1");
  const body = Readable.toWeb(req) as ReadableStream<Uint8Array>;
  const stdin = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(new Uint8Array(head));
      if (req.method !== "GET" && req.method !== "HEAD") {
        for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) controller.enqueue(chunk);
      } else {
        req.resume();
      }
      controller.close();
    },
  });
  const stop = new AbortController();
  res.on("close", () => stop.abort());
  let pending: Buffer = Buffer.alloc(0);
  let started = false;
  const onBytes = (chunk: Buffer) => {
    if (started) {
      res.write(chunk);
      return;
    }
    pending = Buffer.concat([pending, chunk]);
    const end = pending.indexOf("\r\n\r\n");
    if (end < 0) return;
    const parsed = parseHead(pending.subarray(0, end).toString("latin1"));
    if (!parsed) {
      stop.abort();
      return;
    }
    started = true;
    res.writeHead(parsed.status, parsed.headers);
    res.write(pending.subarray(end + 4));
  };
  try {
    const { done } = await sandbox.machine.helperStream(
      "relay",
      { port },
      { signal: stop.signal, stdin, onLine: (line) => onBytes(Buffer.from(line, "base64")) },
    );
    await done;
  } catch (error) {
    if (!started) {
      if (!(error instanceof HelperFailure)) req.resume();
      return portClosed(res, sandbox.id, publicHost, port);
    }
    res.destroy();
    return;
  }
  if (!started) return portClosed(res, sandbox.id, publicHost, port);
  res.end();
}
