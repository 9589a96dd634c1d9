import { randomBytes } from "node:crypto";
import {
  type DriverExecRequest,
  type DriverExecResult,
  NotSupportedError,
  SandboxError,
  shellQuoteArgv,
} from "@sbox/core/spec";
import type { DaytonaHandle } from "./daytona-lifecycle.js";
import { DAYTONA_PROVIDER_NAME } from "./daytona-names.js";
import type { ResolvedDaytonaOptions } from "./daytona-options.js";
import { bounded } from "./daytona-sdk.js";

/** The shell snippet Daytona runs: its sessions take a command line, so argv is shell-quoted exactly. */
export function commandLineOf(command: DriverExecRequest["command"]): string {
  if ("shell" in command) return command.shell;
  if (command.argv.length === 0) {
    throw new SandboxError("Validation", "exec needs a non-empty argv", { provider: DAYTONA_PROVIDER_NAME });
  }
  return shellQuoteArgv(command.argv);
}

/**
 * The buffered exec primitive, through a Daytona session: a session of its own per command (created, run
 * synchronously, deleted), so one command's `cd` or `export` never leaks into the next, and stdout, stderr
 * and the exit code come back separately — Daytona's `/process/execute` mixes both streams into one.
 * Per-command cwd and env are put into the command by the core (E1); stdin is fed by the core from a file
 * (the `stdin` capability is emulated), a user is refused. An aborted call stops waiting; the core's
 * emulations kill what they start by process group.
 */
export async function daytonaExec(
  options: ResolvedDaytonaOptions,
  handle: DaytonaHandle,
  request: DriverExecRequest,
): Promise<DriverExecResult> {
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
  const command = commandLineOf(request.command);
  const process = handle.native.process;
  const sessionId = `sbox-${randomBytes(8).toString("hex")}`;
  await bounded(process.createSession(sessionId), request.signal, options.requestTimeoutMs, "exec");
  try {
    // One synchronous request, so it is held to the request deadline like every other (the SDK's axios
    // timeout is `requestTimeoutMs` too): a silent service is a Timeout on time. Commands that may run
    // longer go detached through the core's E3/E4, which only send short commands here.
    const result = await bounded(
      process.executeSessionCommand(sessionId, { command, runAsync: false }),
      request.signal,
      options.requestTimeoutMs + 1_000,
      "exec",
    );
    if (typeof result.exitCode !== "number") {
      throw new SandboxError("Provider", "daytona: the session command answered without an exit code", {
        provider: DAYTONA_PROVIDER_NAME,
      });
    }
    return { stdout: result.stdout ?? "", stderr: result.stderr ?? "", exitCode: result.exitCode };
  } finally {
    await bounded(
      process.deleteSession(sessionId),
      AbortSignal.timeout(options.requestTimeoutMs),
      options.requestTimeoutMs,
      "exec",
    ).catch(() => undefined);
  }
}
