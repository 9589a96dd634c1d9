import { type PortInfo, SandboxError } from "@sbox/core/spec";
import type { E2BDriverSandbox } from "./e2b-lifecycle.js";

/**
 * Every port of an E2B sandbox is reachable through E2B's proxy at `https://<port>-<id>.<domain>` once a
 * server listens on it: exposing is computing that URL. A sandbox created with restricted public traffic
 * needs its traffic token (sent as the `e2b-traffic-access-token` header); it is returned as `token`.
 */
export function exposePort(sandbox: E2BDriverSandbox, port: number, isPrivate: boolean): PortInfo {
  if (!(Number.isInteger(port) && port >= 1 && port <= 65_535)) {
    throw new SandboxError("Validation", `port must be an integer from 1 to 65535, got ${String(port)}`);
  }
  if (isPrivate) {
    throw new SandboxError(
      "Validation",
      "e2b: private ports are a sandbox-wide setting at create, not per port",
    );
  }
  const info: PortInfo = { port, url: `https://${sandbox.native.getHost(port)}` };
  if (sandbox.native.trafficAccessToken) info.token = sandbox.native.trafficAccessToken;
  return info;
}
