import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ForeignRequest } from "./fault-injection.js";

/** A server on another origin than the remote's, that records every request reaching it. */
export interface ForeignOrigin {
  /** Its base URL, e.g. `http://127.0.0.1:41234`: a redirect target for the `secrets.*` cases. */
  readonly url: string;
  /** Every request it received, in order. */
  requests(): readonly ForeignRequest[];
  /** Stops the server. */
  close(): Promise<void>;
}

/**
 * Starts the other origin on the loopback (a port of its own makes it another origin). Every request is
 * recorded and answered `418` with an error body, so that no client mistakes it for its API.
 */
export async function startForeignOrigin(): Promise<ForeignOrigin> {
  const seen: ForeignRequest[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      seen.push({
        method: request.method ?? "",
        url: request.url ?? "/",
        headers: { ...request.headers },
        body: Buffer.concat(chunks).toString("latin1"),
      });
      response.writeHead(418, { "Content-Type": "application/json", Connection: "close" });
      response.end('{"code":418,"message":"sbox-conformance: another origin","error":"another origin"}');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => [...seen],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
