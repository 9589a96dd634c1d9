/**
 * The Daytona toolbox routes `@daytonaio/sdk` calls inside one sandbox (Daytona's toolbox API description,
 * served under `/toolbox/<sandbox id>`): sessions (create, list, get, delete, exec — synchronous or
 * `runAsync` —, a command's status and its logs), `/process/execute`, `/work-dir`, `/user-home-dir` and
 * `/version`, terminals (`/process/pty`, `daytona-pty.ts`), and whole-file transfer (`daytona-files.ts`). Commands run in the sandbox's backend sandbox. A stopped sandbox's toolbox answers 400, as
 * Daytona's proxy does for a sandbox that is not started; every call counts as activity for auto-stop.
 *
 * Not modelled: a session here is a list of commands, each run by its own shell, so `cd` or `export` in
 * one command does not carry over to the next (Daytona's session keeps one shell).
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AnyCapabilities, Sandbox } from "@sbox/core";
import type { DriverExecControl } from "@sbox/core/spec";
import type { EmulatorBackend } from "../backend.js";
import { readJsonObject, sendJsonResponse } from "../http-server.js";
import { runInMachine } from "../machine-exec.js";
import { daytonaErrorBody } from "./daytona-control-plane.js";
import { bulkDownload, bulkUpload, downloadOne, setPermissions } from "./daytona-files.js";
import { DaytonaApiError, type DaytonaFleet, type DaytonaSandboxRecord } from "./daytona-fleet.js";
import {
  createPtySession,
  type DaytonaPtys,
  deletePtySession,
  ptyInfo,
  resizePtySession,
} from "./daytona-pty.js";

/** The toolbox daemon version the emulator reports. */
export const DAYTONA_TOOLBOX_VERSION = "0.218.0";

/** One command of a session. */
export interface SessionCommand {
  readonly id: string;
  readonly command: string;
  exitCode: number | undefined;
  done: Promise<void>;
  /** Ends the command and its process tree (SIGTERM, then SIGKILL after the grace period). */
  kill: () => Promise<void>;
  /**
   * The command's log as Daytona's daemon writes it (`output.log`): every line of stdout after `01 01 01`,
   * every line of stderr after `02 02 02`, in the order the lines were completed. What the logs socket sends.
   */
  readonly log: Buffer[];
  /** Who follows the log as it grows (the logs WebSocket), given each labelled line as it is appended. */
  readonly followers: Set<(labelled: Buffer) => void>;
}

/** The daemon's stdout label (`log.STDOUT_PREFIX`, the SDK's `STDOUT_PREFIX_BYTES`). */
export const DAYTONA_STDOUT_PREFIX: Buffer = Buffer.from([0x01, 0x01, 0x01]);
/** The daemon's stderr label (`log.STDERR_PREFIX`, the SDK's `STDERR_PREFIX_BYTES`). */
export const DAYTONA_STDERR_PREFIX: Buffer = Buffer.from([0x02, 0x02, 0x02]);

/**
 * The daemon's labellers, byte for byte as they behave (`cmdWrapperFormat` in Daytona's
 * `apps/daemon/pkg/session/wrapper_linux.go`, which `execute.go` writes to the session's shell): each
 * stream is read by `( while IFS= read -r line || [ -n "$line" ]; do printf '\001\001\001%s\n' "$line";
 * done < "$sp" ) >> "$log"` (stderr with `\002\002\002`). So, as there:
 * - a line reaches the log, and its followers, only once it is complete (its newline read);
 * - NUL bytes are dropped (the shell's `read` cannot hold them in a variable);
 * - a last line without a newline is appended when the stream ends, WITH a newline (`printf '%s\n'`),
 *   unless nothing but NULs was left of it (`[ -n "$line" ]` is then false);
 * - `IFS=` and `-r` keep every other byte as it came (leading blanks, backslashes, invalid UTF-8).
 */
function labeller(command: SessionCommand, prefix: Buffer): { write(chunk: Uint8Array): void; end(): void } {
  let partial: Buffer = Buffer.alloc(0);
  const append = (line: Buffer) => {
    const labelled = Buffer.concat([prefix, withoutNuls(line), NEWLINE]);
    command.log.push(labelled);
    for (const follow of command.followers) follow(labelled);
  };
  return {
    write(chunk) {
      partial = Buffer.concat([partial, chunk]);
      let newline = partial.indexOf(0x0a);
      while (newline !== -1) {
        append(partial.subarray(0, newline));
        partial = partial.subarray(newline + 1);
        newline = partial.indexOf(0x0a);
      }
    },
    end() {
      if (withoutNuls(partial).length > 0) append(partial);
      partial = Buffer.alloc(0);
    },
  };
}

const NEWLINE = Buffer.from([0x0a]);

/** The bytes of `line` a shell's `read` keeps: all but NUL. */
function withoutNuls(line: Buffer): Buffer {
  return line.includes(0) ? Buffer.from(line.filter((byte) => byte !== 0)) : line;
}

/**
 * What the daemon answers from a command's log (`execute.go`: `output` is the log as it is, labels and
 * all; `stdout` and `stderr` its `DemuxLogBytes`), read as UTF-8 text as the daemon's JSON strings are.
 */
function logTexts(command: SessionCommand): { output: string; stdout: string; stderr: string } {
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  for (const labelled of command.log) {
    (labelled.subarray(0, 3).equals(DAYTONA_STDOUT_PREFIX) ? stdout : stderr).push(labelled.subarray(3));
  }
  return {
    output: Buffer.concat(command.log).toString("utf8"),
    stdout: Buffer.concat(stdout).toString("utf8"),
    stderr: Buffer.concat(stderr).toString("utf8"),
  };
}

/** A session: its commands, in order. */
export interface Session {
  readonly id: string;
  readonly commands: SessionCommand[];
}

/** Sessions of every sandbox, by sandbox id then session id. */
export class DaytonaSessions {
  private readonly bySandbox = new Map<string, Map<string, Session>>();

  /** The sessions of one sandbox. */
  of(sandboxId: string): Map<string, Session> {
    let sessions = this.bySandbox.get(sandboxId);
    if (!sessions) {
      sessions = new Map();
      this.bySandbox.set(sandboxId, sessions);
    }
    return sessions;
  }

  /** Forgets a sandbox's sessions. */
  forget(sandboxId: string): void {
    this.bySandbox.delete(sandboxId);
  }
}

/** What the toolbox routes need. */
export interface DaytonaToolboxContext {
  readonly backend: EmulatorBackend;
  readonly fleet: DaytonaFleet;
  readonly sessions: DaytonaSessions;
  readonly ptys: DaytonaPtys;
  readonly apiKey: string;
}

function commandDto(command: SessionCommand): Record<string, unknown> {
  const dto: Record<string, unknown> = { id: command.id, command: command.command };
  if (command.exitCode !== undefined) dto.exitCode = command.exitCode;
  return dto;
}

function started(record: DaytonaSandboxRecord): Sandbox<AnyCapabilities> {
  // A sandbox on its way out is gone for its toolbox (Daytona's proxy finds no runner for it).
  if (record.state === "destroying") throw new DaytonaApiError(404, `Sandbox with ID ${record.id} not found`);
  if (record.state !== "started" || !record.sandbox) {
    throw new DaytonaApiError(400, `Sandbox ${record.id} is not started (state: ${record.state})`);
  }
  return record.sandbox;
}

/** How long a deleted session's commands have between SIGTERM and SIGKILL (the daemon's default grace). */
const SESSION_TERMINATION_GRACE_MS = 5_000;

/**
 * Runs a session command in the sandbox's backend sandbox (`runInMachine`, byte-exact): its output goes
 * through the daemon's labellers into the log, and the JSON answers are read from that log, as the
 * daemon's are (so they lose what the labellers lose). Ending it is what the
 * daemon's session delete does: SIGTERM to its tree, then SIGKILL (aborting the run) once the grace period
 * passed.
 */
function runCommand(
  backend: EmulatorBackend,
  sandbox: Sandbox<AnyCapabilities>,
  command: SessionCommand,
): void {
  const stdout = labeller(command, DAYTONA_STDOUT_PREFIX);
  const stderr = labeller(command, DAYTONA_STDERR_PREFIX);
  const abort = new AbortController();
  let control: DriverExecControl | undefined;
  const run = runInMachine(backend, sandbox, {
    argv: ["sh", "-c", command.command],
    signal: abort.signal,
    onStarted: (handed) => {
      control = handed;
    },
    onStdout: (chunk) => stdout.write(chunk),
    onStderr: (chunk) => stderr.write(chunk),
  });
  // As the daemon does, the exit code is recorded only once the labellers flushed everything to the log.
  command.done = run.then(
    (exit) => {
      stdout.end();
      stderr.end();
      command.exitCode = exit.exitCode;
    },
    (error: unknown) => {
      stdout.end();
      stderr.write(Buffer.from(`${error instanceof Error ? error.message : String(error)}\n`, "utf8"));
      stderr.end();
      command.exitCode = 1;
    },
  );
  command.kill = async () => {
    if (control && command.exitCode === undefined) {
      await control.signal("SIGTERM").catch(() => undefined);
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        command.done,
        new Promise((resolve) => {
          timer = setTimeout(resolve, SESSION_TERMINATION_GRACE_MS);
        }),
      ]);
      clearTimeout(timer);
    }
    abort.abort(new Error("the session was deleted"));
    await command.done;
  };
}

/** Answers one toolbox request; `url.pathname` is `/toolbox/<sandbox id>/<route>`. */
export async function serveDaytonaToolbox(
  context: DaytonaToolboxContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  setRoute: (route: string) => void,
): Promise<void> {
  const method = req.method ?? "GET";
  const send = (body: unknown, status = 200) => sendJsonResponse(res, status, body);
  const match = /^\/toolbox\/([^/]+)(\/.*)?$/.exec(url.pathname);
  const path = (match?.[2] ?? "/").replace(/\/+$/, "") || "/";
  try {
    if (req.headers.authorization !== `Bearer ${context.apiKey}`) {
      req.resume();
      setRoute(`toolbox ${method} ${path}`);
      throw new DaytonaApiError(401, "Invalid API key");
    }
    if (!match) {
      req.resume();
      setRoute(`toolbox ${method} ${url.pathname}`);
      throw new DaytonaApiError(404, `Cannot ${method} ${url.pathname}`);
    }
    const record = context.fleet.find(decodeURIComponent(match[1]!));
    const sessions = context.sessions.of(record.id);
    const route = (name: string) => setRoute(`toolbox ${method} ${name}`);
    if (method === "GET" && path === "/version") {
      route("/version");
      return send({ version: DAYTONA_TOOLBOX_VERSION });
    }
    const sandbox = started(record);
    context.fleet.touch(record);
    if (method === "GET" && (path === "/work-dir" || path === "/user-home-dir")) {
      route(path);
      const result = await sandbox.commands.run(path === "/work-dir" ? "pwd" : 'printf "%s\\n" "$HOME"');
      return send({ dir: result.stdout.trim() });
    }
    if (method === "POST" && path === "/files/bulk-upload") {
      route("/files/bulk-upload");
      return await bulkUpload(sandbox, req, res);
    }
    if (method === "POST" && path === "/files/bulk-download") {
      route("/files/bulk-download");
      const body = await readJsonObject(req);
      if (!body) throw new DaytonaApiError(400, "the body must be a JSON object");
      return await bulkDownload(sandbox, body, res);
    }
    if (method === "GET" && path === "/files/download") {
      route("/files/download");
      req.resume();
      return await downloadOne(sandbox, url, res);
    }
    if (method === "POST" && path === "/files/permissions") {
      route("/files/permissions");
      req.resume();
      return await setPermissions(sandbox, url, res);
    }
    if (method === "POST" && path === "/process/execute") {
      route("/process/execute");
      const body = await readJsonObject(req);
      if (!body || typeof body.command !== "string") throw new DaytonaApiError(400, "command is required");
      const envs = body.envs ?? {};
      if (typeof envs !== "object" || envs === null) throw new DaytonaApiError(400, "envs must be an object");
      const timeout = body.timeout;
      if (timeout !== undefined && (typeof timeout !== "number" || timeout < 0)) {
        throw new DaytonaApiError(400, "timeout must be a non-negative number of seconds");
      }
      const options: Parameters<typeof sandbox.commands.run>[1] = { env: envs as Record<string, string> };
      if (typeof body.cwd === "string" && body.cwd !== "") options.cwd = body.cwd;
      if (typeof timeout === "number" && timeout > 0) options.timeoutMs = timeout * 1000;
      try {
        const result = await sandbox.commands.run(body.command, options);
        // Daytona's execute answers stdout and stderr together, as `result`.
        return send({ exitCode: result.exitCode, result: result.stdout + result.stderr });
      } catch (error) {
        if (error instanceof Error && "code" in error && error.code === "Timeout") {
          throw new DaytonaApiError(408, `command timed out after ${timeout} seconds`);
        }
        throw error;
      }
    }
    if (path === "/process/session") {
      if (method === "GET") {
        route("/process/session");
        return send(
          [...sessions.values()].map((s) => ({ sessionId: s.id, commands: s.commands.map(commandDto) })),
        );
      }
      if (method === "POST") {
        route("/process/session");
        const body = await readJsonObject(req);
        const sessionId = body?.sessionId;
        if (typeof sessionId !== "string" || sessionId === "")
          throw new DaytonaApiError(400, "sessionId is required");
        if (sessions.has(sessionId)) throw new DaytonaApiError(409, `session ${sessionId} already exists`);
        sessions.set(sessionId, { id: sessionId, commands: [] });
        res.writeHead(201).end();
        return;
      }
    }
    if (path === "/process/pty") {
      const ptys = context.ptys.of(record.id);
      if (method === "GET") {
        route("/process/pty");
        req.resume();
        return send({ sessions: [...ptys.values()].map(ptyInfo) });
      }
      if (method === "POST") {
        route("/process/pty");
        const body = await readJsonObject(req);
        if (!body) throw new DaytonaApiError(400, "the body must be a JSON object");
        const session = await createPtySession(ptys, sandbox, {
          id: body.id,
          cols: body.cols,
          rows: body.rows,
          cwd: body.cwd,
          envs: body.envs,
          lazyStart: body.lazyStart,
        });
        return send({ sessionId: session.id }, 201);
      }
    }
    const ptyMatch = /^\/process\/pty\/([^/]+)(\/resize)?$/.exec(path);
    if (ptyMatch && ptyMatch[1] !== "create-connect") {
      route(`/process/pty/{sessionId}${ptyMatch[2] ?? ""}`);
      const ptys = context.ptys.of(record.id);
      const session = ptys.get(decodeURIComponent(ptyMatch[1]!));
      if (!session) {
        req.resume();
        throw new DaytonaApiError(404, `PTY session ${ptyMatch[1]} not found`);
      }
      if (ptyMatch[2] === undefined && method === "GET") {
        req.resume();
        return send(ptyInfo(session));
      }
      if (ptyMatch[2] === undefined && method === "DELETE") {
        req.resume();
        await deletePtySession(ptys, session);
        return send({ message: `PTY session ${session.id} deleted` });
      }
      if (ptyMatch[2] !== undefined && method === "POST") {
        const body = await readJsonObject(req);
        if (!body) throw new DaytonaApiError(400, "the body must be a JSON object");
        await resizePtySession(session, body);
        return send(ptyInfo(session));
      }
    }
    const sessionMatch = /^\/process\/session\/([^/]+)(?:\/(exec|command\/([^/]+)(\/logs)?))?$/.exec(path);
    if (sessionMatch) {
      const session = sessions.get(decodeURIComponent(sessionMatch[1]!));
      const name =
        sessionMatch[2] === undefined
          ? ""
          : sessionMatch[2] === "exec"
            ? "/exec"
            : `/command/{commandId}${sessionMatch[4] ?? ""}`;
      route(`/process/session/{sessionId}${name}`);
      if (!session) {
        req.resume();
        throw new DaytonaApiError(404, `session ${sessionMatch[1]} not found`);
      }
      if (name === "" && method === "GET") {
        return send({ sessionId: session.id, commands: session.commands.map(commandDto) });
      }
      if (name === "" && method === "DELETE") {
        // As Daytona's daemon does (session/delete.go): the session's processes get SIGTERM, then SIGKILL
        // after a grace period, before the answer.
        sessions.delete(session.id);
        await Promise.all(session.commands.filter((c) => c.exitCode === undefined).map((c) => c.kill()));
        res.writeHead(204).end();
        return;
      }
      if (name === "/exec" && method === "POST") {
        const body = await readJsonObject(req);
        if (!body || typeof body.command !== "string" || body.command === "")
          throw new DaytonaApiError(400, "command is required");
        const command: SessionCommand = {
          id: randomUUID(),
          command: body.command,
          exitCode: undefined,
          done: Promise.resolve(),
          kill: () => Promise.resolve(),
          log: [],
          followers: new Set(),
        };
        session.commands.push(command);
        runCommand(context.backend, sandbox, command);
        if (body.runAsync === true || body.async === true) return send({ cmdId: command.id }, 202);
        await command.done;
        return send({ cmdId: command.id, ...logTexts(command), exitCode: command.exitCode });
      }
      const command = session.commands.find((c) => c.id === sessionMatch[3]);
      if (method === "GET" && sessionMatch[3] !== undefined) {
        if (!command) throw new DaytonaApiError(404, `command ${sessionMatch[3]} not found`);
        if (sessionMatch[4] === undefined) return send(commandDto(command));
        if (url.searchParams.get("follow") === "true") await command.done;
        return send(logTexts(command));
      }
    }
    req.resume();
    route(path);
    throw new DaytonaApiError(404, `Cannot ${method} ${path}`);
  } catch (error) {
    if (error instanceof DaytonaApiError)
      return send(daytonaErrorBody(error.status, error.message), error.status);
    throw error;
  }
}
