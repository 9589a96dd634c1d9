import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A throwaway HTTP server on this machine. Egress cases ask for a random path from inside a sandbox and
 * then check whether the request arrived: the only network target the kit ever uses is one it started.
 */
export interface HostServer {
  /** The TCP port, listening on every local interface. */
  readonly port: number;
  /** A fresh path that no one has asked for yet, e.g. `"/sbox-conformance/3f2a..."`. */
  newPath(): string;
  /** True when `path` was requested. */
  wasHit(path: string): boolean;
  /** How many times `path` was requested so far (a heartbeat from inside a sandbox counts up). */
  hitCount(path: string): number;
  /** Stops the server. */
  close(): Promise<void>;
}

/**
 * Starts a server on `0.0.0.0` (so it is reachable on the loopback and on bridge gateways such as
 * docker0). Every answer is `200` with body `sbox-conformance-ok <path>`.
 */
export async function startHostServer(): Promise<HostServer> {
  const hits = new Map<string, number>();
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0] ?? "/";
    hits.set(path, (hits.get(path) ?? 0) + 1);
    response.writeHead(200, { "content-type": "text/plain", connection: "close" });
    response.end(`sbox-conformance-ok ${path}\n`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "0.0.0.0", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    newPath: () => `/sbox-conformance/${randomUUID()}`,
    wasHit: (path) => hits.has(path),
    hitCount: (path) => hits.get(path) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
