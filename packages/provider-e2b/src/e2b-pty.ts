import { type DriverPty, type DriverPtyRequest, SandboxError } from "@sbox/core/spec";
import { type CommandContext, killProcessTree, waitForExit } from "./e2b-commands.js";
import type { E2BDriverSandbox } from "./e2b-lifecycle.js";
import { sandboxCall } from "./e2b-sandbox-call.js";
import { type E2BSandbox, unarySignal } from "./e2b-sdk.js";

type PtyCreateOpts = Parameters<E2BSandbox["pty"]["create"]>[0];

function size(cols: number, rows: number): { cols: number; rows: number } {
  for (const [name, value] of [
    ["cols", cols],
    ["rows", rows],
  ] as const) {
    if (!(Number.isInteger(value) && value > 0 && value <= 65_535)) {
      throw new SandboxError(
        "Validation",
        `pty ${name} must be an integer from 1 to 65535, got ${String(value)}`,
      );
    }
  }
  return { cols, rows };
}

/**
 * Opens a terminal with the SDK's `pty.create`: E2B always starts an interactive login bash there, so a
 * `command` cannot be given (write it to the terminal instead).
 */
export async function createPty(
  ctx: CommandContext,
  sandbox: E2BDriverSandbox,
  request: DriverPtyRequest,
): Promise<DriverPty> {
  if (request.command !== undefined) {
    throw new SandboxError(
      "Validation",
      "e2b pty: E2B terminals always run an interactive login shell; write the command to the terminal instead",
    );
  }
  const opts: PtyCreateOpts = {
    ...size(request.cols, request.rows),
    onData: (data: Uint8Array) => request.onData(data),
    timeoutMs: 0,
  };
  if (request.cwd !== undefined) opts.cwd = request.cwd;
  if (request.env !== undefined) opts.envs = { ...request.env };
  if (ctx.options.user !== undefined) opts.user = ctx.options.user;
  const handle = await sandboxCall(ctx, sandbox.id, "pty.create", request.signal, () =>
    sandbox.native.pty.create(opts),
  );
  const pid = handle.pid;
  const exit = waitForExit(handle);
  exit.catch(() => {});
  return {
    pid,
    write: (data) =>
      sandboxCall(ctx, sandbox.id, `pty ${pid} input`, undefined, () =>
        sandbox.native.pty.sendInput(pid, typeof data === "string" ? new TextEncoder().encode(data) : data, {
          signal: unarySignal(ctx.options),
        }),
      ),
    resize: (cols, rows) =>
      sandboxCall(ctx, sandbox.id, `pty ${pid} resize`, undefined, () =>
        sandbox.native.pty.resize(pid, size(cols, rows), { signal: unarySignal(ctx.options) }),
      ),
    kill: async () => {
      await killProcessTree(ctx, sandbox, pid, "SIGKILL").catch(async (error: unknown) => {
        if ((error as { code?: unknown }).code !== "NotFound") throw error;
      });
    },
    wait: () => exit,
  };
}
