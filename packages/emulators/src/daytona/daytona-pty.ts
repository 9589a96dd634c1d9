/**
 * Daytona's terminals (the toolbox `/process/pty` routes, as `@daytona/toolbox-api-client` and
 * `@daytonaio/sdk`'s `process.createPty` / `connectPty` use them): create, list, get, resize and delete
 * over HTTP; `GET /process/pty/{sessionId}/connect` and `GET /process/pty/create-connect?id&cols&rows&cwd`
 * upgraded to a WebSocket. Each terminal is a real pty of the backend sandbox running the sandbox's
 * interactive shell. On a socket, the daemon's protocol: a text control message
 * `{"type":"control","status":"connected"}` first, then the terminal's output as binary frames; what the
 * client sends is typed into the terminal; when the shell ends, `{"type":"control","status":"exited",
 * "exitCode":N}` (with the `X-Daytona-Pty-Exit-Control` subprotocol) and a normal close (1000) whose reason
 * is `{"exitCode":N}`. Envs of create-connect come in an `X-Daytona-Pty-Envs~<base64url JSON>` subprotocol.
 *
 * Not modelled: `lazyStart` is accepted and reported but the shell starts at create; output printed while
 * no client is connected is kept (up to 1 MiB) and replayed to the next one.
 */
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { AnyCapabilities, PtyHandle, Sandbox } from "@sbox/core";
import { type WebSocket, WebSocketServer } from "ws";
import { DaytonaApiError, type DaytonaFleet } from "./daytona-fleet.js";
import { toolboxUpgrade } from "./daytona-toolbox-upgrade.js";

/** The subprotocol with which a client asks for the exit as a control message. */
const EXIT_CONTROL_SUBPROTOCOL = "X-Daytona-Pty-Exit-Control";
const ENVS_SUBPROTOCOL_PREFIX = "X-Daytona-Pty-Envs~";
/** Output kept for the next client while none is connected. */
const BACKLOG_LIMIT = 1024 * 1024;
/** The two terminal sockets: create-and-connect, and connect to an existing session. */
const PTY_ROUTE = /^\/toolbox\/([^/]+)\/process\/pty\/(?:create-connect|([^/]+)\/connect)$/;
const SESSION_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** One terminal of a sandbox. */
export interface DaytonaPtySession {
  readonly id: string;
  cols: number;
  rows: number;
  readonly cwd: string;
  readonly envs: Record<string, string>;
  readonly lazyStart: boolean;
  readonly createdAt: string;
  active: boolean;
  exitCode: number | undefined;
  readonly terminal: PtyHandle;
  readonly clients: Set<{ ws: WebSocket; exitControl: boolean }>;
  backlog: Buffer[];
  backlogSize: number;
}

/** The terminals of every sandbox, by sandbox id then session id. */
export class DaytonaPtys {
  private readonly bySandbox = new Map<string, Map<string, DaytonaPtySession>>();

  /** The terminals of one sandbox. */
  of(sandboxId: string): Map<string, DaytonaPtySession> {
    let ptys = this.bySandbox.get(sandboxId);
    if (!ptys) {
      ptys = new Map();
      this.bySandbox.set(sandboxId, ptys);
    }
    return ptys;
  }
}

/** The `PtySessionInfo` body of a terminal. */
export function ptyInfo(session: DaytonaPtySession): Record<string, unknown> {
  return {
    id: session.id,
    cols: session.cols,
    rows: session.rows,
    cwd: session.cwd,
    envs: session.envs,
    createdAt: session.createdAt,
    active: session.active,
    lazyStart: session.lazyStart,
  };
}

function size(value: unknown, name: string, fallback: number): number {
  if (value === undefined || value === null || value === "") return fallback;
  const n = typeof value === "string" ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > 1000) {
    throw new DaytonaApiError(400, `${name} must be an integer from 1 to 1000`);
  }
  return n;
}

/** What a create asks for, from a JSON body or create-connect's query. */
export interface PtyCreateInput {
  readonly id: unknown;
  readonly cols: unknown;
  readonly rows: unknown;
  readonly cwd: unknown;
  readonly envs: unknown;
  readonly lazyStart: unknown;
}

/** Starts a terminal in `sandbox` (the sandbox's interactive shell on a pty of the backend). */
export async function createPtySession(
  ptys: Map<string, DaytonaPtySession>,
  sandbox: Sandbox<AnyCapabilities>,
  input: PtyCreateInput,
): Promise<DaytonaPtySession> {
  if (typeof input.id !== "string" || !SESSION_ID.test(input.id)) {
    throw new DaytonaApiError(400, "id is required: letters, digits, '.', '_' or '-', at most 128");
  }
  if (ptys.has(input.id)) throw new DaytonaApiError(409, `PTY session ${input.id} already exists`);
  const cols = size(input.cols, "cols", 80);
  const rows = size(input.rows, "rows", 24);
  const envs: Record<string, string> = {};
  if (input.envs !== undefined && input.envs !== null) {
    if (typeof input.envs !== "object" || Array.isArray(input.envs)) {
      throw new DaytonaApiError(400, "envs must be an object of strings");
    }
    for (const [key, value] of Object.entries(input.envs)) {
      if (typeof value !== "string" || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) {
        throw new DaytonaApiError(
          400,
          `envs: ${JSON.stringify(key)} is not a variable name with a string value`,
        );
      }
      envs[key] = value;
    }
  }
  if (input.cwd !== undefined && input.cwd !== null && typeof input.cwd !== "string") {
    throw new DaytonaApiError(400, "cwd must be a string");
  }
  const api = sandbox.pty;
  if (!api) throw new DaytonaApiError(500, "this emulator's backend has no terminals (pty)");
  const cwd =
    typeof input.cwd === "string" && input.cwd !== ""
      ? input.cwd
      : (await sandbox.commands.run("pwd")).stdout.trim() || "/";
  let session: DaytonaPtySession | undefined;
  const early: Buffer[] = [];
  const onData = (data: Uint8Array) => {
    const chunk = Buffer.from(data);
    if (session) deliver(session, chunk);
    else early.push(chunk);
  };
  const terminal = await api.create({ cols, rows, cwd, env: envs, onData }).catch((error: unknown) => {
    throw new DaytonaApiError(
      400,
      `failed to start PTY session: ${error instanceof Error ? error.message : String(error)}`,
    );
  });
  session = {
    id: input.id,
    cols,
    rows,
    cwd,
    envs,
    lazyStart: input.lazyStart === true,
    createdAt: new Date().toISOString(),
    active: true,
    exitCode: undefined,
    terminal,
    clients: new Set(),
    backlog: [],
    backlogSize: 0,
  };
  ptys.set(session.id, session);
  for (const chunk of early) deliver(session, chunk);
  const ended = session;
  void terminal.wait().then(
    (exit) => finish(ended, exit.exitCode),
    () => finish(ended, -1),
  );
  return session;
}

function deliver(session: DaytonaPtySession, chunk: Buffer): void {
  if (session.clients.size === 0) {
    if (session.backlogSize + chunk.byteLength <= BACKLOG_LIMIT) {
      session.backlog.push(chunk);
      session.backlogSize += chunk.byteLength;
    }
    return;
  }
  for (const client of session.clients) client.ws.send(chunk);
}

function finish(session: DaytonaPtySession, exitCode: number): void {
  session.active = false;
  session.exitCode = exitCode;
  for (const client of session.clients) closeWithExit(client, exitCode);
  session.clients.clear();
}

function closeWithExit(client: { ws: WebSocket; exitControl: boolean }, exitCode: number): void {
  if (client.exitControl) client.ws.send(JSON.stringify({ type: "control", status: "exited", exitCode }));
  client.ws.close(1000, JSON.stringify({ exitCode }));
}

/** Ends a terminal (its shell and what runs in it) and forgets it. */
export async function deletePtySession(
  ptys: Map<string, DaytonaPtySession>,
  session: DaytonaPtySession,
): Promise<void> {
  ptys.delete(session.id);
  if (session.active) await session.terminal.kill().catch(() => undefined);
}

/** Resizes a terminal. */
export async function resizePtySession(
  session: DaytonaPtySession,
  body: Record<string, unknown>,
): Promise<void> {
  if (body.cols === undefined || body.rows === undefined)
    throw new DaytonaApiError(400, "cols and rows are required");
  const cols = size(body.cols, "cols", 80);
  const rows = size(body.rows, "rows", 24);
  if (!session.active) throw new DaytonaApiError(400, `PTY session ${session.id} has ended`);
  await session.terminal.resize(cols, rows);
  session.cols = cols;
  session.rows = rows;
}

/** What the terminal sockets read. */
export interface DaytonaPtySocketContext {
  readonly fleet: DaytonaFleet;
  readonly ptys: DaytonaPtys;
  readonly apiKey: string;
}

function envsOfSubprotocols(header: string | undefined): unknown {
  for (const token of (header ?? "").split(",").map((t) => t.trim())) {
    if (!token.startsWith(ENVS_SUBPROTOCOL_PREFIX)) continue;
    try {
      return JSON.parse(
        Buffer.from(token.slice(ENVS_SUBPROTOCOL_PREFIX.length), "base64url").toString("utf8"),
      );
    } catch {
      throw new DaytonaApiError(400, "the envs subprotocol is not base64url JSON");
    }
  }
  return undefined;
}

/** Answers an upgrade of a terminal route; returns false for any other path. */
export function daytonaPtySockets(
  context: DaytonaPtySocketContext,
): (req: IncomingMessage, socket: Socket, head: Buffer) => boolean {
  const wss = new WebSocketServer({
    noServer: true,
    // Answers with the exit-control subprotocol when offered (the SDK offers it and requires an answer).
    handleProtocols: (protocols) =>
      protocols.has(EXIT_CONTROL_SUBPROTOCOL) ? EXIT_CONTROL_SUBPROTOCOL : false,
  });
  return (req, socket, head) => {
    const upgrade = toolboxUpgrade(req, socket, context.apiKey, PTY_ROUTE);
    if (upgrade === "other") return false;
    if (upgrade === "refused") return true;
    const { url, match, refuse } = upgrade;
    void (async () => {
      let session: DaytonaPtySession | undefined;
      try {
        const record = context.fleet.find(decodeURIComponent(match[1]!));
        if (record.state !== "started" || !record.sandbox) {
          throw new DaytonaApiError(400, `Sandbox ${record.id} is not started (state: ${record.state})`);
        }
        context.fleet.touch(record);
        const ptys = context.ptys.of(record.id);
        if (match[2] === undefined) {
          session = await createPtySession(ptys, record.sandbox, {
            id: url.searchParams.get("id") ?? undefined,
            cols: url.searchParams.get("cols") ?? undefined,
            rows: url.searchParams.get("rows") ?? undefined,
            cwd: url.searchParams.get("cwd") ?? undefined,
            envs: envsOfSubprotocols(req.headers["sec-websocket-protocol"]),
            lazyStart: false,
          });
        } else {
          session = ptys.get(decodeURIComponent(match[2]));
          if (!session) throw new DaytonaApiError(404, `PTY session ${match[2]} not found`);
        }
      } catch (error) {
        if (error instanceof DaytonaApiError) refuse(error.status, error.message);
        else refuse(500, error instanceof Error ? error.message : String(error));
        return;
      }
      const terminal = session;
      wss.handleUpgrade(req, socket, head, (ws) => {
        const client = { ws, exitControl: ws.protocol === EXIT_CONTROL_SUBPROTOCOL };
        ws.send(JSON.stringify({ type: "control", status: "connected" }));
        for (const chunk of terminal.backlog.splice(0)) ws.send(chunk);
        terminal.backlogSize = 0;
        if (!terminal.active) {
          closeWithExit(client, terminal.exitCode ?? -1);
          return;
        }
        terminal.clients.add(client);
        ws.on("message", (data: Buffer | ArrayBuffer | Buffer[]) => {
          const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
          void terminal.terminal.write(bytes).catch(() => undefined);
        });
        ws.on("close", () => terminal.clients.delete(client));
      });
    })();
    return true;
  };
}
