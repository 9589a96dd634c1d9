/**
 * An HTTP proxy in front of the Docker Engine's socket that holds back the requests a test picks, so a
 * test can make one container's answers slow (as a loaded engine would) without touching the engine.
 */
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A running proxy: `url` for `docker({ host })`, `close()` when done. */
export interface SlowProxy {
  readonly url: string;
  close(): Promise<void>;
}

/** Forwards every request to `socketPath`, holding those `isSlow` picks for `delayMs` first. */
export async function startSlowProxy(options: {
  socketPath?: string | undefined;
  isSlow: (method: string, path: string) => boolean;
  delayMs: number;
}): Promise<SlowProxy> {
  const socketPath = options.socketPath ?? "/var/run/docker.sock";
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((incoming, outgoing) => {
    const forward = () => {
      const upstream = request(
        { socketPath, method: incoming.method, path: incoming.url, headers: incoming.headers },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
        },
      );
      upstream.on("error", () => outgoing.destroy());
      incoming.pipe(upstream);
    };
    if (!options.isSlow(incoming.method ?? "GET", incoming.url ?? "")) return forward();
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!outgoing.destroyed) forward();
    }, options.delayMs);
    timers.add(timer);
    incoming.on("close", () => {
      clearTimeout(timer);
      timers.delete(timer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
