import { type PortInfo, SandboxError } from "@sbox/core/spec";
import type { E2BDriverSandbox } from "./e2b-lifecycle.js";
import type { E2BPreviewUrl } from "./e2b-options.js";

/**
 * Every port of an E2B sandbox is reachable through E2B's proxy at `https://<port>-<id>.<domain>` once a
 * server listens on it: exposing is computing that URL (or the one the `previewUrl` option makes of it). A sandbox created with restricted public traffic
 * needs its traffic token (sent as the `e2b-traffic-access-token` header); it is returned as `token`.
 */
export function exposePort(
  sandbox: E2BDriverSandbox,
  port: number,
  isPrivate: boolean,
  previewUrl: E2BPreviewUrl,
): PortInfo {
  if (!(Number.isInteger(port) && port >= 1 && port <= 65_535)) {
    throw new SandboxError("Validation", `port must be an integer from 1 to 65535, got ${String(port)}`);
  }
  if (isPrivate) {
    throw new SandboxError(
      "Validation",
      "e2b: private ports are a sandbox-wide setting at create, not per port",
    );
  }
  const host = sandbox.native.getHost(port);
  const info: PortInfo = { port, url: previewUrl({ sandboxId: sandbox.id, port, host }) };
  if (sandbox.native.trafficAccessToken) info.token = sandbox.native.trafficAccessToken;
  return info;
}
