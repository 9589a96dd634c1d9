/**
 * Following a session command's logs: `GET /process/session/{sessionId}/command/{commandId}/logs?follow=true`
 * upgraded to a WebSocket, as `@daytonaio/sdk`'s `process.getSessionCommandLogs(session, command, onStdout,
 * onStderr)` opens it. As Daytona's daemon does (`apps/daemon/pkg/session/log.go`, `ReadLog` over
 * `util.ReadLogWithExitCode`), the socket sends the command's log — every line behind its label, stdout
 * after `01 01 01`, stderr after `02 02 02` (the SDK's `STDOUT_PREFIX_BYTES` / `STDERR_PREFIX_BYTES`) — from
 * its start, then as it grows, as binary frames cut from the byte stream by size (the daemon reads its log
 * file 1024 bytes at a time), so a label may be split across frames; it closes normally (1000) once the
 * command has ended and everything was sent. The API key is checked as on every toolbox route.
 */
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { WebSocketServer } from "ws";
import type { DaytonaFleet } from "./daytona-fleet.js";
import type { DaytonaSessions, SessionCommand } from "./daytona-toolbox.js";
import { toolboxUpgrade } from "./daytona-toolbox-upgrade.js";

/** A session command's logs socket. */
const LOGS_ROUTE = /^\/toolbox\/([^/]+)\/process\/session\/([^/]+)\/command\/([^/]+)\/logs$/;

/** The most a frame holds: the daemon's read size of the log file. */
export const DAYTONA_LOG_FRAME_BYTES = 1024;

/** What the logs socket reads. */
export interface DaytonaLogStreamContext {
  readonly fleet: DaytonaFleet;
  readonly sessions: DaytonaSessions;
  readonly apiKey: string;
  /** The most bytes a frame holds (default {@link DAYTONA_LOG_FRAME_BYTES}); 1 sends every byte alone. */
  readonly frameBytes?: number | undefined;
}

/** The logs sockets: the upgrade handler, and a way to drop every open one (a test's broken connection). */
export interface DaytonaLogStreams {
  /** Answers an upgrade under `/toolbox/`; false when it is not a logs route (the caller answers 404). */
  upgrade(req: IncomingMessage, socket: Socket, head: Buffer): boolean;
  /** Drops every open logs socket without a close frame, as a lost connection does; how many it dropped. */
  dropAll(): number;
}

/** The logs sockets of one emulator. */
export function daytonaLogStreams(context: DaytonaLogStreamContext): DaytonaLogStreams {
  const wss = new WebSocketServer({ noServer: true });
  const frameBytes = context.frameBytes ?? DAYTONA_LOG_FRAME_BYTES;
  if (!Number.isInteger(frameBytes) || frameBytes < 1) {
    throw new RangeError(`logFrameBytes must be a whole number of bytes, at least 1 (got ${frameBytes})`);
  }
  const open = new Set<import("ws").WebSocket>();
  const upgrade = (req: IncomingMessage, socket: Socket, head: Buffer): boolean => {
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
      open.add(ws);
      const send = (bytes: Buffer) => {
        for (let at = 0; at < bytes.length; at += frameBytes) ws.send(bytes.subarray(at, at + frameBytes));
      };
      // What the log holds so far, as one byte stream (frames cut across lines, as the daemon's reads are).
      send(Buffer.concat(followed.log));
      const follow = (labelled: Buffer) => send(labelled);
      followed.followers.add(follow);
      ws.on("close", () => {
        open.delete(ws);
        followed.followers.delete(follow);
      });
      if (url.searchParams.get("follow") !== "true") {
        followed.followers.delete(follow);
        ws.close(1000);
        return;
      }
      void followed.done.then(() => {
        followed.followers.delete(follow);
        if (ws.readyState === ws.OPEN) ws.close(1000);
      });
    });
    return true;
  };
  return {
    upgrade,
    dropAll() {
      const count = open.size;
      for (const ws of open) ws.terminate();
      open.clear();
      return count;
    },
  };
}
