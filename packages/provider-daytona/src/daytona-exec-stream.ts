import { randomBytes } from "node:crypto";
import {
  type DriverExecRequest,
  type DriverExit,
  type DriverOutputCallbacks,
  SandboxError,
} from "@sbox/core/spec";
import { checkDaytonaExecRequest, commandLineOf } from "./daytona-exec.js";
import type { DaytonaHandle } from "./daytona-lifecycle.js";
import { DAYTONA_PROVIDER_NAME } from "./daytona-names.js";
import type { ResolvedDaytonaOptions } from "./daytona-options.js";
import { bounded } from "./daytona-sdk.js";

/** How often and how long the exit code is asked for after the logs stream closed (the daemon writes it last). */
const EXIT_POLL_MS = 100;
const EXIT_POLL_TRIES = 50;

/**
 * The native streaming exec primitive: the command runs asynchronously in a session of its own, its output
 * comes live over the daemon's logs WebSocket (`getSessionCommandLogs` with callbacks, which ends when the
 * command ends), then the exit code from the session command. Daytona cannot send a chosen signal to a
 * session command, so `execSignals` stays off: an abort (the core's `kill()`, a deadline) stops waiting and
 * deletes the session, which ends its commands (SIGTERM, then SIGKILL). Every request but the logs stream is
 * held to `requestTimeoutMs`; the stream lasts as long as the command.
 */
export async function daytonaExecStream(
  options: ResolvedDaytonaOptions,
  handle: DaytonaHandle,
  request: DriverExecRequest & DriverOutputCallbacks,
): Promise<DriverExit> {
  checkDaytonaExecRequest(request);
  const command = commandLineOf(request.command);
  const process = handle.native.process;
  const sessionId = `sbox-${randomBytes(8).toString("hex")}`;
  const deadline = options.requestTimeoutMs;
  await bounded(process.createSession(sessionId), request.signal, deadline, "exec");
  try {
    const started = await bounded(
      process.executeSessionCommand(sessionId, { command, runAsync: true }),
      request.signal,
      deadline,
      "exec",
    );
    const commandId = started.cmdId;
    if (typeof commandId !== "string" || commandId === "") {
      throw new SandboxError("Provider", "daytona: the session command started without a command id", {
        provider: DAYTONA_PROVIDER_NAME,
      });
    }
    await bounded(
      process.getSessionCommandLogs(sessionId, commandId, request.onStdout, request.onStderr),
      request.signal,
      // The stream is as long as the command: only an abort ends the wait.
      2_147_483_647,
      "exec",
    );
    for (let attempt = 0; ; attempt++) {
      const state = await bounded(
        process.getSessionCommand(sessionId, commandId),
        request.signal,
        deadline,
        "exec",
      );
      if (typeof state.exitCode === "number") return { exitCode: state.exitCode };
      if (attempt >= EXIT_POLL_TRIES) {
        throw new SandboxError(
          "Provider",
          "daytona: the command's output ended but no exit code was reported",
          {
            provider: DAYTONA_PROVIDER_NAME,
          },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, EXIT_POLL_MS));
    }
  } finally {
    // Deleting the session ends whatever still runs in it (an aborted or failed run).
    await bounded(process.deleteSession(sessionId), AbortSignal.timeout(deadline), deadline, "exec").catch(
      () => undefined,
    );
  }
}
