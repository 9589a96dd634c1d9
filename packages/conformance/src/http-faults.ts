import type { IncomingMessage, ServerResponse } from "node:http";
import type { FaultInjection, RemoteFault } from "./fault-injection.js";

/** A {@link FaultInjection} for servers built on `node:http`, and the check their handlers call first. */
export interface HttpFaults {
  /** The hook to hand to the kit (`RemoteUnderTest.faults`). */
  readonly faults: FaultInjection;
  /** The fault in force. */
  readonly current: () => RemoteFault;
  /**
   * Call first in every request handler of the server: `true` when the fault answered (or is holding) the
   * request, and the handler must leave it alone.
   */
  intercept(request: IncomingMessage, response: ServerResponse): boolean;
}

/**
 * Fault injection for a `node:http` server, in one line of its request handler:
 *
 * ```ts
 * const faults = createHttpFaults();
 * createServer((req, res) => { if (faults.intercept(req, res)) return; ... });
 * ```
 */
export function createHttpFaults(): HttpFaults {
  let fault: RemoteFault = { kind: "none" };
  const held = new Set<ServerResponse>();
  const release = () => {
    for (const response of held) response.socket?.destroy();
    held.clear();
  };
  return {
    faults: {
      set(next) {
        fault = next;
        if (next.kind !== "stall") release();
      },
    },
    current: () => fault,
    intercept(request, response) {
      switch (fault.kind) {
        case "none":
          return false;
        case "stall":
          request.resume();
          held.add(response);
          response.once("close", () => held.delete(response));
          return true;
        case "echo-credential": {
          request.resume();
          const text = `echo of the request: ${Object.entries(request.headers)
            .map(([name, value]) => `${name}: ${Array.isArray(value) ? value.join(", ") : (value ?? "")}`)
            .join("; ")}`;
          response.writeHead(400, { "Content-Type": "application/json", Connection: "close" });
          response.end(JSON.stringify({ code: 400, message: text, error: text }));
          return true;
        }
        case "redirect": {
          request.resume();
          response.writeHead(fault.status ?? 307, {
            Location: `${fault.location.replace(/\/+$/, "")}${request.url ?? "/"}`,
            Connection: "close",
          });
          response.end();
          return true;
        }
      }
    },
  };
}
