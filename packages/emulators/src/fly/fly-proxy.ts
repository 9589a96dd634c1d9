/**
 * A stand-in for the Fly Proxy: `http://<proxy>/<app>/<port>/<path>` reaches `<path>` on a started machine
 * of `<app>` whose `config.services` publish `<port>` (the request goes to the service's `internal_port`
 * inside the machine). Fly's real proxy answers on `https://<app>.fly.dev:<port>`, which needs DNS and TLS
 * for the app's name; the path form needs neither. Nothing published: 503 like a proxy with no instance.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { forwardedHeaders, forwardToSandboxPort } from "../sandbox-relay.js";
import type { FlyFleet } from "./fly-fleet.js";

function unavailable(res: ServerResponse, message: string): void {
  res.writeHead(503, { "Content-Type": "text/plain; charset=utf-8" });
  res.end(message);
}

/** Handles one proxied request. */
export async function serveFlyProxy(
  fleet: FlyFleet,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  setRoute: (route: string) => void,
): Promise<void> {
  setRoute(`${req.method} /{app}/{port}/...`);
  const match = /^\/([^/]+)\/(\d+)(\/.*)?$/.exec(url.pathname);
  if (!match) {
    req.resume();
    return unavailable(res, "the Fly Proxy stand-in answers on /<app>/<port>/<path>");
  }
  const app = decodeURIComponent(match[1]!);
  const port = Number(match[2]);
  const candidates = fleet
    .machinesOf(app)
    .filter((m) => m.state === "started" && !m.cordoned)
    .flatMap((m) =>
      (m.config.services ?? [])
        .filter(
          (s) =>
            s.protocol === "tcp" &&
            (s.ports ?? []).some(
              (p) =>
                p.port === port ||
                (p.start_port !== undefined &&
                  p.end_port !== undefined &&
                  port >= p.start_port &&
                  port <= p.end_port),
            ),
        )
        .map((s) => ({ machine: m, internal: s.internal_port })),
    );
  const target = candidates[Math.floor(Math.random() * candidates.length)];
  const sandbox = target?.machine.running();
  if (!target || !sandbox) {
    req.resume();
    return unavailable(res, `no started machine of app ${app} publishes port ${port}`);
  }
  req.url = `${match[3] ?? "/"}${url.search}`;
  const headers = forwardedHeaders(req, `${app}.fly.dev`);
  headers["Fly-Forwarded-Port"] = String(port);
  const failure = await forwardToSandboxPort(sandbox, target.internal, req, res, headers);
  if (failure === "closed")
    return unavailable(res, `machine ${target.machine.id} does not listen on port ${target.internal}`);
  if (failure === "broken") res.destroy();
}
