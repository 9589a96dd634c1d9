/**
 * Following a session command's logs: `GET /process/session/{sessionId}/command/{commandId}/logs?follow=true`
 * upgraded to a WebSocket, as `@daytonaio/sdk`'s `process.getSessionCommandLogs(session, command, onStdout,
 * onStderr)` opens it. Each message is output labelled as Daytona's daemon labels it — stdout after
 * `01 01 01`, stderr after `02 02 02` (the SDK's `STDOUT_PREFIX_BYTES` / `STDERR_PREFIX_BYTES`) —: first what
 * the command printed so far (its stdout, then its stderr), then what it prints as it prints it, and the socket closes normally (1000) once the command
 * has ended and everything was sent. The API key is checked as on every toolbox route.
 */
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { WebSocketServer } from "ws";
import type { DaytonaFleet } from "./daytona-fleet.js";
import type { DaytonaSessions, SessionCommand } from "./daytona-toolbox.js";
import { toolboxUpgrade } from "./daytona-toolbox-upgrade.js";

/** A session command's logs socket. */
const LOGS_ROUTE = /^\/toolbox\/([^/]+)\/process\/session\/([^/]+)\/command\/([^/]+)\/logs$/;

const STDOUT_PREFIX = Buffer.from([0x01, 0x01, 0x01]);
const STDERR_PREFIX = Buffer.from([0x02, 0x02, 0x02]);

/** What the logs socket reads. */
export interface DaytonaLogStreamContext {
  readonly fleet: DaytonaFleet;
  readonly sessions: DaytonaSessions;
  readonly apiKey: string;
}

function labelled(stream: "stdout" | "stderr", chunk: string): Buffer {
  return Buffer.concat([stream === "stdout" ? STDOUT_PREFIX : STDERR_PREFIX, Buffer.from(chunk, "utf8")]);
}

/**
 * Answers an upgrade under `/toolbox/`; returns false when it is not a logs route (the caller answers 404).
 */
export function daytonaLogStreams(
  context: DaytonaLogStreamContext,
): (req: IncomingMessage, socket: Socket, head: Buffer) => boolean {
  const wss = new WebSocketServer({ noServer: true });
  return (req, socket, head) => {
    const upgrade = toolboxUpgrade(req, socket, context.apiKey, LOGS_ROUTE);
    if (upgrade === "other") return false;
    if (upgrade === "refused") return true;
    const { url, match, refuse } = upgrade;
    let command: SessionCommand | undefined;
    try {
      const record = context.fleet.find(decodeURIComponent(match[1]!));
      if (record.state !== "started") {
        refuse(400, `Sandbox ${record.id} is not started (state: ${record.state})`);
        return true;
      }
      context.fleet.touch(record);
      const session = context.sessions.of(record.id).get(decodeURIComponent(match[2]!));
      command = session?.commands.find((c) => c.id === decodeURIComponent(match[3]!));
    } catch {
      command = undefined;
    }
    if (!command) {
      refuse(404, "session or command not found");
      return true;
    }
    const followed = command;
    wss.handleUpgrade(req, socket, head, (ws) => {
      if (followed.stdout) ws.send(labelled("stdout", followed.stdout));
      if (followed.stderr) ws.send(labelled("stderr", followed.stderr));
      const follow = (stream: "stdout" | "stderr", chunk: string) => ws.send(labelled(stream, chunk));
      followed.followers.add(follow);
      ws.on("close", () => followed.followers.delete(follow));
      if (url.searchParams.get("follow") !== "true") {
        followed.followers.delete(follow);
        ws.close(1000);
        return;
      }
      void followed.done.then(() => {
        followed.followers.delete(follow);
        ws.close(1000);
      });
    });
    return true;
  };
}
