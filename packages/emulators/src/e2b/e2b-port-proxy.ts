/**
 * E2B's public sandbox URLs (`https://<port>-<id>.<domain>`): requests for a port other than envd's reach
 * whatever listens on that port inside the sandbox (through the backend's way in, or the in-sandbox
 * relay). The Host header is kept, or replaced by `maskRequestHost` with `${PORT}` filled in; a sandbox
 * created with `allowPublicTraffic: false` wants its traffic token; a port nobody listens on is answered
 * like E2B's proxy does.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { forwardedHeaders, forwardToSandboxPort } from "../sandbox-relay.js";
import { portClosed, trafficTokenRefused } from "./e2b-proxy-errors.js";
import type { E2BSandbox } from "./e2b-sandbox.js";

const PORT_PLACEHOLDER = "$" + "{PORT}";

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
  const host = mask ? mask.replaceAll(PORT_PLACEHOLDER, String(port)) : publicHost;
  const headers = forwardedHeaders(req, host, [
    "e2b-traffic-access-token",
    "e2b-sandbox-id",
    "e2b-sandbox-port",
  ]);
  const failure = await forwardToSandboxPort(sandbox.backend, port, req, res, headers);
  if (failure === "closed") return portClosed(res, sandbox.id, publicHost, port);
  if (failure === "broken") res.destroy();
}
