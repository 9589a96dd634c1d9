/**
 * The gate every WebSocket route of the toolbox API shares (session command logs, terminals): the path must
 * be that route's, and the request must carry the emulator's API key, as on every toolbox route. A refusal is
 * answered on the raw socket with a Daytona error body, since no WebSocket exists yet.
 */
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { rawAnswer } from "../http-server.js";
import { daytonaErrorBody } from "./daytona-control-plane.js";

/** An upgrade that passed the gate: its URL, the route's match, and how to refuse it from here on. */
export interface ToolboxUpgrade {
  readonly url: URL;
  readonly match: RegExpExecArray;
  refuse(status: number, message: string): void;
}

/**
 * `"other"` when the path is not `route` (the caller answers it), `"refused"` when the API key is wrong
 * (already answered 401), else the upgrade to serve.
 */
export function toolboxUpgrade(
  req: IncomingMessage,
  socket: Socket,
  apiKey: string,
  route: RegExp,
): ToolboxUpgrade | "other" | "refused" {
  const url = new URL(req.url ?? "/", "http://emulator");
  const match = route.exec(url.pathname);
  if (!match) return "other";
  const refuse = (status: number, message: string) =>
    rawAnswer(socket, status, {}, daytonaErrorBody(status, message));
  if (req.headers.authorization !== `Bearer ${apiKey}`) {
    refuse(401, "Invalid API key");
    return "refused";
  }
  return { url, match, refuse };
}
