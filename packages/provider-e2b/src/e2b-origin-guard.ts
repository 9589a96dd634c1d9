import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { connect, type Socket } from "node:net";

/**
 * Keeps the `e2b` SDK's requests on E2B's origins. The SDK sends the API key (`X-API-Key`) and each
 * sandbox's access token (`X-Access-Token`) as headers of its own, follows redirects itself, and lets no
 * caller see or change either. So every SDK connection goes through this loopback proxy (the SDK's `proxy`
 * option: one CONNECT tunnel per connection, TLS stays end to end), which opens tunnels only to the
 * origins the provider talks to: a redirect to any other origin fails to connect, and no request, with or
 * without credentials, reaches it.
 *
 * The proxy listens on 127.0.0.1 only and wants a random per-provider credential, so no other local user
 * can tunnel through it; it never keeps the process alive.
 */
export interface E2BOriginGuard {
  /** The proxy URL to hand to the SDK (`http://<user>:<password>@127.0.0.1:<port>`). */
  readonly proxyUrl: string;
  /** Lets tunnels to `https://<anything>.<domain>` through too (the domain a sandbox was created on). */
  allowDomain(domain: string): void;
  /** Stops listening and closes every tunnel. */
  close(): Promise<void>;
}

/** Where the SDK may connect: exact origins (the API and daemon URLs) and domains whose hosts serve E2B. */
export interface E2BOrigins {
  /** `http(s)://host[:port]` URLs whose origin is allowed. */
  readonly urls: readonly string[];
  /** Domains whose hosts are allowed on port 443 (`api.e2b.app`, `49983-<id>.e2b.app`, ...). */
  readonly domains: readonly string[];
  /** How long opening a tunnel may take, in ms. */
  readonly connectTimeoutMs: number;
}

function hostPort(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    const port = parsed.port || (parsed.protocol === "https:" ? "443" : "80");
    return `${parsed.hostname.replace(/^\[|\]$/g, "").toLowerCase()}:${port}`;
  } catch {
    return undefined;
  }
}

/** `host:port` of a CONNECT request, IPv6 brackets removed. */
function targetOf(request: IncomingMessage): { host: string; port: number } | undefined {
  const match = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(request.url ?? "");
  if (!match?.[1] || !match[2]) return undefined;
  const port = Number(match[2]);
  return port > 0 && port < 65_536 ? { host: match[1].toLowerCase(), port } : undefined;
}

/** Starts the guard for `origins`. */
export async function startOriginGuard(origins: E2BOrigins): Promise<E2BOriginGuard> {
  const exact = new Set(origins.urls.map(hostPort).filter((x): x is string => x !== undefined));
  const domains = new Set(origins.domains.map((d) => d.toLowerCase()));
  const allowed = (host: string, port: number): boolean =>
    exact.has(`${host}:${port}`) ||
    (port === 443 && [...domains].some((domain) => host === domain || host.endsWith(`.${domain}`)));
  const user = randomBytes(8).toString("hex");
  const password = randomBytes(24).toString("hex");
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
  const tunnels = new Set<Socket>();

  const server: Server = createServer((_request, response) => {
    response.writeHead(405, { Connection: "close" });
    response.end();
  });
  server.on("connect", (request: IncomingMessage, client: Socket, head: Buffer) => {
    client.unref();
    const refuse = (status: string) =>
      client.end(`HTTP/1.1 ${status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    client.on("error", () => client.destroy());
    if (request.headers["proxy-authorization"] !== expected)
      return refuse("407 Proxy Authentication Required");
    const target = targetOf(request);
    if (!target || !allowed(target.host, target.port)) return refuse("403 Forbidden");
    const upstream = connect({ host: target.host, port: target.port });
    upstream.unref();
    tunnels.add(client).add(upstream);
    const forget = () => {
      tunnels.delete(client);
      tunnels.delete(upstream);
    };
    let established = false;
    const timer = setTimeout(() => {
      upstream.destroy();
      refuse("504 Gateway Timeout");
    }, origins.connectTimeoutMs);
    timer.unref();
    upstream.once("connect", () => {
      clearTimeout(timer);
      established = true;
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on("error", () => {
      clearTimeout(timer);
      if (!established && !client.destroyed) refuse("502 Bad Gateway");
      else client.destroy();
    });
    upstream.once("close", () => {
      forget();
      client.destroy();
    });
    client.once("close", () => {
      forget();
      upstream.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  server.unref();
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    proxyUrl: `http://${user}:${password}@127.0.0.1:${port}`,
    allowDomain: (domain) => {
      domains.add(domain.toLowerCase());
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of tunnels) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
