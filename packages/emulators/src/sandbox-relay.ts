/**
 * Reaching a server that listens inside a machine, for emulators whose vendor proxies traffic to sandbox
 * ports (E2B's sandbox URLs, the Fly Proxy): through the backend's own way in when it has one
 * (`ports.expose` gives a URL this process can reach: provider-local's loopback ports), else through a
 * relay that runs inside the sandbox — one HTTP/1.0 exchange per request, the request written to a socket
 * the relay opens on the sandbox's loopback, the answer read back until the server closes it. The relay
 * is a short Python 3 program run through the backend's exec, so it works whatever the backend's network
 * looks like (Docker publishes only ports declared at create; a block-all sandbox has only loopback).
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import type { AnyCapabilities, Sandbox } from "@sbox/core";

const RELAY_SOURCE = String.raw`
import base64, json, socket, sys, threading
port = int(sys.argv[1])
sock = None
for host in ("127.0.0.1", "::1"):
    try:
        sock = socket.create_connection((host, port), timeout=10)
        break
    except OSError:
        sock = None
if sock is None:
    sys.stdout.write(json.dumps({"err": "closed"}) + "\n"); sys.exit(0)
sock.settimeout(None)
sys.stdout.write(json.dumps({"ok": "connected"}) + "\n"); sys.stdout.flush()
def pump():
    try:
        while True:
            chunk = sys.stdin.buffer.read1(65536)
            if not chunk: break
            sock.sendall(chunk)
    except OSError:
        pass
threading.Thread(target=pump, daemon=True).start()
while True:
    try: data = sock.recv(49152)
    except OSError: break
    if not data: break
    sys.stdout.write(base64.b64encode(data).decode("ascii") + "\n"); sys.stdout.flush()
`;

/** Headers that describe one connection and are not forwarded. */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** Why a request could not reach the port. */
export type RelayFailure = "closed" | "broken";

function parseHead(head: string): { status: number; headers: Record<string, string[]> } | undefined {
  const lines = head.split("\r\n");
  const status = /^HTTP\/\d(?:\.\d)? (\d{3})/.exec(lines[0] ?? "");
  if (!status) return undefined;
  const headers: Record<string, string[]> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (HOP_BY_HOP_HEADERS.has(name)) continue;
    const values = headers[name] ?? [];
    values.push(line.slice(colon + 1).trim());
    headers[name] = values;
  }
  return { status: Number(status[1]), headers };
}

async function viaUrl(
  target: URL,
  req: IncomingMessage,
  res: ServerResponse,
  headers: Record<string, string | string[]>,
): Promise<RelayFailure | undefined> {
  return new Promise((resolve) => {
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port || 80,
        method: req.method,
        path: req.url ?? "/",
        headers,
      },
      (answer) => {
        const out: Record<string, string | string[]> = {};
        for (const [name, value] of Object.entries(answer.headers)) {
          if (value !== undefined && !HOP_BY_HOP_HEADERS.has(name)) out[name] = value;
        }
        res.writeHead(answer.statusCode ?? 502, out);
        answer.pipe(res);
        answer.on("end", () => resolve(undefined));
        answer.on("error", () => {
          res.destroy();
          resolve(undefined);
        });
      },
    );
    upstream.on("error", () => {
      req.resume();
      resolve(res.headersSent ? "broken" : "closed");
    });
    req.pipe(upstream);
  });
}

async function viaRelay(
  sandbox: Sandbox<AnyCapabilities>,
  port: number,
  req: IncomingMessage,
  res: ServerResponse,
  headers: Record<string, string | string[]>,
): Promise<RelayFailure | undefined> {
  const lines = [`${req.method ?? "GET"} ${req.url ?? "/"} HTTP/1.0`];
  for (const [name, value] of Object.entries(headers)) {
    for (const one of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${one}`);
  }
  lines.push("Connection: close", "", "");
  const head = Buffer.from(lines.join("\r\n"), "latin1");
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  const stdin = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(new Uint8Array(head));
      if (hasBody) {
        for await (const chunk of req) controller.enqueue(new Uint8Array(chunk as Buffer));
      } else {
        req.resume();
      }
      controller.close();
    },
  });
  const stop = new AbortController();
  res.on("close", () => stop.abort());
  let buffer = "";
  let connected: boolean | undefined;
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
    await sandbox.commands.run(["python3", "-c", RELAY_SOURCE, String(port)], {
      stdin,
      signal: stop.signal,
      collectOutput: false,
      onStdout: (chunk) => {
        buffer += chunk;
        let at = buffer.indexOf("\n");
        while (at >= 0) {
          const line = buffer.slice(0, at);
          buffer = buffer.slice(at + 1);
          if (connected === undefined) connected = line.includes('"ok"');
          else if (line !== "") onBytes(Buffer.from(line, "base64"));
          at = buffer.indexOf("\n");
        }
      },
    });
  } catch {
    if (!started) return connected ? "broken" : "closed";
    res.destroy();
    return undefined;
  }
  if (!started) return connected ? "broken" : "closed";
  res.end();
  return undefined;
}

/**
 * Forwards one request to `port` of `sandbox` with `headers` (already filtered); resolves `undefined` once
 * answered, or why it could not be (nothing was sent to the client then).
 */
export async function forwardToSandboxPort(
  sandbox: Sandbox<AnyCapabilities>,
  port: number,
  req: IncomingMessage,
  res: ServerResponse,
  headers: Record<string, string | string[]>,
): Promise<RelayFailure | undefined> {
  let target: URL | undefined;
  try {
    target = sandbox.ports ? new URL((await sandbox.ports.expose(port)).url) : undefined;
  } catch {
    target = undefined;
  }
  if (target?.protocol === "http:") return viaUrl(target, req, res, headers);
  return viaRelay(sandbox, port, req, res, headers);
}

/** `x-forwarded-for` → `X-Forwarded-For`: the spelling Go's proxies (Fly's, E2B's) put on the wire. */
export function canonicalHeaderName(name: string): string {
  return name
    .split("-")
    .map((part) => (part === "" ? part : part[0]!.toUpperCase() + part.slice(1).toLowerCase()))
    .join("-");
}

/** The request's headers minus hop-by-hop ones and the `drop` list, with `Host` set, names canonical. */
export function forwardedHeaders(
  req: IncomingMessage,
  host: string,
  drop: readonly string[] = [],
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || HOP_BY_HOP_HEADERS.has(name) || drop.includes(name) || name === "host")
      continue;
    out[canonicalHeaderName(name)] = value;
  }
  out.Host = host;
  return out;
}
