/**
 * The answers of E2B's sandbox proxy when it cannot forward a request, in the JSON form API clients get
 * (e2b-dev/infra, packages/shared/pkg/proxy/template): an unknown, killed or paused-without-auto-resume
 * sandbox is 502 "The sandbox was not found", a closed port 502, a missing or wrong traffic token 403.
 */
import type { ServerResponse } from "node:http";

function send(res: ServerResponse, body: Record<string, unknown>): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(body.code as number, { "Content-Type": "application/json" });
  res.end(text);
}

/** 502: no such running sandbox. */
export function sandboxNotFound(res: ServerResponse, sandboxId: string, host: string): void {
  send(res, { sandboxId, message: "The sandbox was not found", host, code: 502 });
}

/** 502: the sandbox runs but nothing listens on the port. */
export function portClosed(res: ServerResponse, sandboxId: string, host: string, port: number): void {
  send(res, { sandboxId, message: "The sandbox is running but port is not open", host, port, code: 502 });
}

/** 403: the sandbox wants its traffic token. */
export function trafficTokenRefused(
  res: ServerResponse,
  sandboxId: string,
  host: string,
  missing: boolean,
): void {
  const header = "e2b-traffic-access-token";
  send(res, {
    sandboxId,
    message: missing
      ? `Sandbox is secured with traffic access token. Token header '${header}' is missing`
      : `Sandbox is secured with traffic access token. Provided token in header '${header}' is invalid`,
    host,
    header,
    code: 403,
  });
}
