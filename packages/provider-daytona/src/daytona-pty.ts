import { randomBytes } from "node:crypto";
import { type DriverPty, type DriverPtyRequest, SandboxError } from "@sbox/core/spec";
import type { DaytonaHandle } from "./daytona-lifecycle.js";
import { DAYTONA_PROVIDER_NAME } from "./daytona-names.js";
import type { ResolvedDaytonaOptions } from "./daytona-options.js";
import { bounded } from "./daytona-sdk.js";

/**
 * Daytona names its terminals and reports no process id for them, so each terminal gets a number of its
 * own here (unique within this process), which is what `pty.pid` holds.
 */
let nextTerminalNumber = 1;

/**
 * Opens a terminal with the SDK's `process.createPty` (one WebSocket: create and connect at once): the
 * sandbox's interactive shell on a pty, input typed over the socket, resize and kill through the toolbox's
 * `/process/pty/{id}` routes. Daytona's terminals always run the shell, so a `command` is refused (write
 * it to the terminal instead).
 */
export async function createDaytonaPty(
  options: ResolvedDaytonaOptions,
  handle: DaytonaHandle,
  request: DriverPtyRequest,
): Promise<DriverPty> {
  if (request.command !== undefined) {
    throw new SandboxError(
      "Validation",
      "daytona pty: Daytona terminals always run the sandbox's shell; write the command to the terminal instead",
      { provider: DAYTONA_PROVIDER_NAME },
    );
  }
  const process = handle.native.process;
  const id = `sbox-pty-${randomBytes(8).toString("hex")}`;
  const deadline = options.requestTimeoutMs;
  const created = process.createPty({
    id,
    cols: request.cols,
    rows: request.rows,
    ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
    ...(request.env === undefined ? {} : { envs: { ...request.env } }),
    onData: (data) => request.onData(data),
  });
  let terminal: Awaited<typeof created>;
  try {
    terminal = await bounded(created, request.signal, deadline, "pty.create");
  } catch (error) {
    // A terminal that opened after the caller gave up is ended, not left running.
    void created.then(
      (late) => late.kill().then(() => late.disconnect()),
      () => undefined,
    );
    throw error;
  }
  const pid = nextTerminalNumber++;
  let killed = false;
  const exit = terminal.wait().then((result) => {
    void terminal.disconnect();
    if (typeof result.exitCode === "number") return { exitCode: result.exitCode };
    if (killed) return { signal: "SIGKILL" };
    throw new SandboxError(
      "Provider",
      `daytona pty: the terminal ended without an exit code${result.error ? ` (${result.error})` : ""}`,
      { provider: DAYTONA_PROVIDER_NAME },
    );
  });
  exit.catch(() => undefined);
  const timeout = () => AbortSignal.timeout(deadline);
  return {
    pid,
    write: (data) => bounded(terminal.sendInput(data), timeout(), deadline, "pty.write"),
    resize: async (cols, rows) => {
      await bounded(terminal.resize(cols, rows), timeout(), deadline, "pty.resize");
    },
    kill: async () => {
      killed = true;
      await bounded(terminal.kill(), timeout(), deadline, "pty.kill");
    },
    wait: () => exit,
  };
}
