import { randomBytes } from "node:crypto";
import {
  type DriverExecRequest,
  type DriverExecResult,
  type DriverExit,
  type DriverOutputCallbacks,
  NotSupportedError,
  SandboxError,
} from "@sbox/core/spec";
import {
  pidFileOf,
  signalDaytonaExec,
  supervisedCommandLine,
  supervisorBaseOf,
} from "./daytona-exec-signals.js";
import type { DaytonaHandle } from "./daytona-lifecycle.js";
import { followDaytonaLogs, logsSocketTarget } from "./daytona-logs-socket.js";
import { DAYTONA_PROVIDER_NAME } from "./daytona-names.js";
import type { ResolvedDaytonaOptions } from "./daytona-options.js";
import { bounded } from "./daytona-sdk.js";
import { DaytonaStreamDecoder, decodeDaytonaStream } from "./daytona-stream-decoder.js";

/** How often the exit code is asked for once the logs socket closed (the daemon writes it just before). */
const EXIT_CODE_POLL_MS = 100;

/** The argv a command runs as under the supervisor: a shell snippet is `sh -c <snippet>`; an empty argv is refused. */
function argvOf(command: DriverExecRequest["command"]): string[] {
  if ("shell" in command) return ["sh", "-c", command.shell];
  if (command.argv.length === 0) {
    throw new SandboxError("Validation", "exec needs a non-empty argv", { provider: DAYTONA_PROVIDER_NAME });
  }
  return [...command.argv];
}

/** What neither exec path takes: a user (Daytona runs as the sandbox's), cwd, env or stdin (the core's). */
function checkExecRequest(request: DriverExecRequest): void {
  if (request.user !== undefined) {
    throw new NotSupportedError(
      "commands.run({ user })",
      DAYTONA_PROVIDER_NAME,
      "Daytona runs commands as the sandbox's user",
    );
  }
  if (request.cwd !== undefined || request.env !== undefined || request.stdin !== undefined) {
    throw new SandboxError(
      "Validation",
      "daytona: the exec primitive takes no cwd, env or stdin (the core puts them into the command)",
      { provider: DAYTONA_PROVIDER_NAME },
    );
  }
}

/**
 * The buffered exec primitive, through a Daytona session: a session of its own per command (created, run
 * synchronously, deleted), so one command's `cd` or `export` never leaks into the next, and stdout, stderr
 * and the exit code come back separately — Daytona's `/process/execute` mixes both streams into one. The
 * command runs under the supervisor (`daytona-exec-signals.ts`), whose encoding carries its output through
 * the daemon's lossy line labellers byte for byte; the answer's `stdout` and `stderr` are decoded here.
 * Per-command cwd and env are put into the command by the core (E1); stdin is fed by the core from a file
 * (the `stdin` capability is emulated), a user is refused. An aborted call stops waiting; the core's
 * emulations kill what they start by process group.
 */
export async function daytonaExec(
  options: ResolvedDaytonaOptions,
  handle: DaytonaHandle,
  request: DriverExecRequest,
): Promise<DriverExecResult> {
  checkExecRequest(request);
  if (request.onStarted !== undefined) return collected(options, handle, request);
  const argv = argvOf(request.command);
  const process = handle.native.process;
  const execId = randomBytes(8).toString("hex");
  const sessionId = `sbox-${execId}`;
  await bounded(process.createSession(sessionId), request.signal, options.requestTimeoutMs, "exec");
  try {
    // One synchronous request, so it is held to the request deadline like every other (the SDK's axios
    // timeout is `requestTimeoutMs` too): a silent service is a Timeout on time. Commands that may run
    // longer go detached through the core's E3/E4, which only send short commands here.
    const result = await bounded(
      process.executeSessionCommand(sessionId, {
        command: supervisedCommandLine(argv, supervisorBaseOf(execId)),
        runAsync: false,
      }),
      request.signal,
      options.requestTimeoutMs + 1_000,
      "exec",
    );
    if (typeof result.exitCode !== "number") {
      throw new SandboxError("Provider", "daytona: the session command answered without an exit code", {
        provider: DAYTONA_PROVIDER_NAME,
      });
    }
    return {
      stdout: decodeDaytonaStream("stdout", result.stdout ?? ""),
      stderr: decodeDaytonaStream("stderr", result.stderr ?? ""),
      exitCode: result.exitCode,
    };
  } finally {
    await bounded(
      process.deleteSession(sessionId),
      AbortSignal.timeout(options.requestTimeoutMs),
      options.requestTimeoutMs,
      "exec",
    ).catch(() => undefined);
  }
}

/** The streamed exec with its output collected: the buffered primitive when the caller may signal it. */
async function collected(
  options: ResolvedDaytonaOptions,
  handle: DaytonaHandle,
  request: DriverExecRequest,
): Promise<DriverExecResult> {
  const stdout: Uint8Array[] = [];
  const stderr: Uint8Array[] = [];
  const exit = await daytonaExecStream(options, handle, {
    ...request,
    onStdout: (chunk) => stdout.push(typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk),
    onStderr: (chunk) => stderr.push(typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk),
  });
  return { ...exit, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr) };
}

/** The exit code of a session command whose logs ended: asked for until the daemon has it, within the deadline. */
async function exitCodeOf(
  options: ResolvedDaytonaOptions,
  handle: DaytonaHandle,
  sessionId: string,
  commandId: string,
  signal: AbortSignal,
): Promise<number> {
  const deadline = Date.now() + options.requestTimeoutMs;
  for (;;) {
    const left = Math.max(1, deadline - Date.now());
    const command = await bounded(
      handle.native.process.getSessionCommand(sessionId, commandId),
      signal,
      left,
      "exec",
    );
    if (typeof command.exitCode === "number") return command.exitCode;
    if (Date.now() + EXIT_CODE_POLL_MS >= deadline) {
      throw new SandboxError(
        "Provider",
        `daytona: the command's logs ended but no exit code came within ${options.requestTimeoutMs} ms`,
        { provider: DAYTONA_PROVIDER_NAME, retryable: false },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, EXIT_CODE_POLL_MS));
  }
}

/**
 * The streaming exec primitive, native: the command runs as an asynchronous command of a Daytona session of
 * its own (`POST /process/session/{id}/exec` with `runAsync`, answered at once), under a supervisor that
 * records its pid (see `daytona-exec-signals.ts`), so `request.onStarted` gets a control that signals the
 * command's whole tree with exactly the signal asked for. Output comes from the command's logs WebSocket
 * (`…/command/{id}/logs?follow=true`, the route the SDK's `getSessionCommandLogs` follows) through this
 * package's own demultiplexer, byte for byte as it comes; the exit code from `GET …/command/{id}` once the
 * daemon closed the socket. No request lasts as long as the command.
 *
 * An abort closes the socket, SIGKILLs the command's tree and deletes the session (Daytona's daemon then
 * ends what is left of the session's process group); a socket that drops is a `Provider` error, after the
 * same cleanup. The session is deleted in every case.
 */
export async function daytonaExecStream(
  options: ResolvedDaytonaOptions,
  handle: DaytonaHandle,
  request: DriverExecRequest & DriverOutputCallbacks,
): Promise<DriverExit> {
  checkExecRequest(request);
  const argv = argvOf(request.command);
  const process = handle.native.process;
  const execId = randomBytes(8).toString("hex");
  const sessionId = `sbox-${execId}`;
  const base = supervisorBaseOf(execId);
  const pidFile = pidFileOf(base);
  const deadline = options.requestTimeoutMs;
  await bounded(process.createSession(sessionId), request.signal, deadline, "exec");
  let started = false;
  let ended = false;
  try {
    const answer = await bounded(
      process.executeSessionCommand(sessionId, {
        command: supervisedCommandLine(argv, base),
        runAsync: true,
      }),
      request.signal,
      deadline,
      "exec",
    );
    const commandId = answer.cmdId;
    if (typeof commandId !== "string" || commandId === "") {
      throw new SandboxError("Provider", "daytona: the session command was started without a command id", {
        provider: DAYTONA_PROVIDER_NAME,
      });
    }
    started = true;
    request.onStarted?.({
      signal: async (name) => {
        if (!ended) await signalDaytonaExec(options, handle, pidFile, name);
      },
    });
    const target = logsSocketTarget(handle.native, sessionId, commandId);
    // The log carries the supervisor's encoding of each stream: decoded here, chunk by chunk as it comes.
    const stdout = new DaytonaStreamDecoder("stdout", (bytes) => request.onStdout(bytes));
    const stderr = new DaytonaStreamDecoder("stderr", (bytes) => request.onStderr(bytes));
    await followDaytonaLogs({
      ...target,
      signal: request.signal,
      deadlineMs: deadline,
      output: {
        onStdout: (chunk) => stdout.push(chunk),
        onStderr: (chunk) => stderr.push(chunk),
        ...(request.ready === undefined ? {} : { ready: () => request.ready?.() }),
      },
    });
    stdout.end();
    stderr.end();
    const exitCode = await exitCodeOf(options, handle, sessionId, commandId, request.signal);
    ended = true;
    return { exitCode };
  } catch (error) {
    // A command given up on (aborted, or its logs lost) is ended, not left running.
    if (started && !ended) {
      ended = true;
      await signalDaytonaExec(options, handle, pidFile, "SIGKILL").catch(() => undefined);
    }
    throw error;
  } finally {
    ended = true;
    await bounded(process.deleteSession(sessionId), AbortSignal.timeout(deadline), deadline, "exec").catch(
      () => undefined,
    );
  }
}
