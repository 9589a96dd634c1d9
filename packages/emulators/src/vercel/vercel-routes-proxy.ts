/**
 * A stand-in for Vercel's port routes: `http://<routes>/<subdomain>/<path>` reaches `<path>` on the port a
 * route maps to, inside the sandbox's running session. The service answers on
 * `https://<subdomain>.vercel.run`, which needs DNS and TLS for Vercel's domain; the path form needs
 * neither, and the routes the API returns carry it in their `url`. No running session: 502, as the
 * service's edge answers for a stopped sandbox.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { forwardedHeaders, forwardToSandboxPort } from "../sandbox-relay.js";
import type { VercelFleet } from "./vercel-fleet.js";

function unavailable(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "Content-Type": "text/plain; charset=utf-8" });
  res.end(message);
}

/** Handles one request to a route. */
export async function serveVercelRoute(
  fleet: VercelFleet,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  setRoute: (route: string) => void,
): Promise<void> {
  setRoute(`${req.method} /{subdomain}/...`);
  const match = /^\/([^/]+)(\/.*)?$/.exec(url.pathname);
  const target = match ? fleet.routeTarget(decodeURIComponent(match[1]!)) : undefined;
  if (!match || !target) {
    req.resume();
    return unavailable(res, 404, "no sandbox route has this subdomain");
  }
  const machine = target.session.status === "running" ? target.session.machine : undefined;
  if (!machine) {
    req.resume();
    return unavailable(res, 502, "the sandbox behind this route is not running");
  }
  req.url = `${match[2] ?? "/"}${url.search}`;
  const headers = forwardedHeaders(req, `${match[1]}.vercel.run`);
  const failure = await forwardToSandboxPort(machine, target.port, req, res, headers);
  if (failure === "closed")
    return unavailable(res, 502, `nothing listens on port ${target.port} in the sandbox`);
  if (failure === "broken") res.destroy();
}
