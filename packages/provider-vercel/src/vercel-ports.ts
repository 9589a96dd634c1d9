import type { PortInfo } from "@sbox/core/spec";
import { SandboxError } from "@sbox/core/spec";
import type { VercelDriverSandbox } from "./vercel-lifecycle.js";
import { VERCEL_PROVIDER_NAME } from "./vercel-names.js";

/**
 * `ports.expose(port)`: Vercel routes only the ports declared at create (`spec.ports`), each at its
 * route's URL (`https://<subdomain>.vercel.run`, what the SDK's `domain(port)` builds; the route's own
 * `url` is used, so the emulator's routes work too). An undeclared port is a `Validation` error.
 */
export function exposePort(sandbox: VercelDriverSandbox, port: number): PortInfo {
  const route = sandbox.native.routes.find((r) => r.port === port);
  if (!route) {
    throw new SandboxError(
      "Validation",
      `vercel ports.expose ${port}: Vercel routes only the ports declared at create (spec.ports)`,
      { provider: VERCEL_PROVIDER_NAME, retryable: false },
    );
  }
  return { port, url: route.url || sandbox.native.domain(port) };
}

/** `ports.list`: every declared port's route. */
export function listPorts(sandbox: VercelDriverSandbox): PortInfo[] {
  return sandbox.native.routes.map((r) => ({ port: r.port, url: r.url || sandbox.native.domain(r.port) }));
}
