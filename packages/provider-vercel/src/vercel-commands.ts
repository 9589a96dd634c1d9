import { randomUUID } from "node:crypto";
import type {
  DriverExecRequestV1 as DriverExecRequest,
  DriverExecResultV1 as DriverExecResult,
  DriverExitV1 as DriverExit,
  DriverOutputCallbacksV1 as DriverOutputCallbacks,
} from "@sbox/core/spec";
import { SandboxError, signalNumber } from "@sbox/core/spec";
import type { VercelDriverSandbox } from "./vercel-lifecycle.js";
import { VERCEL_PROVIDER_NAME } from "./vercel-names.js";

type Command = import("@vercel/sandbox").Command;

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

/**
 * Starts a command detached (`POST .../cmd`, answered at once), so no HTTP request lasts as long as the
 * command: output then comes from the logs stream and the exit from `wait`. argv goes as is (no shell);
 * a shell string runs under `sh -c`. Vercel's commands have no stdin: given stdin is written to a file
 * first and the command reads it from there. A user other than root (which is `sudo`) cannot be chosen.
 */
async function startCommand(sandbox: VercelDriverSandbox, request: DriverExecRequest): Promise<Command> {
  if (request.user !== undefined && request.user !== "root") {
    throw new SandboxError(
      "Validation",
      `vercel: commands run as the sandbox's user or as root (sudo), not as ${JSON.stringify(request.user)}`,
      { provider: VERCEL_PROVIDER_NAME, retryable: false },
    );
  }
  let argv: string[] =
    "argv" in request.command ? [...request.command.argv] : ["sh", "-c", request.command.shell];
  if (argv.length === 0 || argv[0] === "") {
    throw new SandboxError("Validation", "vercel: an empty command", {
      provider: VERCEL_PROVIDER_NAME,
      retryable: false,
    });
  }
  if (request.stdin !== undefined) {
    const bytes = request.stdin instanceof Uint8Array ? request.stdin : await readAll(request.stdin);
    const file = `/tmp/.sbox-stdin-${randomUUID()}`;
    await sandbox.native.writeFiles([{ path: file, content: bytes }], { signal: request.signal });
    // The file goes as soon as the command has it open.
    argv = ["sh", "-c", 'exec < "$0" && rm -f "$0" && exec "$@"', file, ...argv];
  }
  const [cmd, ...args] = argv as [string, ...string[]];
  return sandbox.native.runCommand({
    cmd,
    args,
    detached: true,
    ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
    ...(request.env === undefined ? {} : { env: { ...request.env } }),
    ...(request.user === "root" ? { sudo: true } : {}),
    signal: request.signal,
  });
}

/**
 * Follows a started command to its end: logs as they come, then the exit. An abort of the request's
 * signal kills the command (SIGKILL to its tree) before rejecting.
 */
async function follow(
  command: Command,
  request: DriverExecRequest,
  callbacks: DriverOutputCallbacks,
): Promise<DriverExit> {
  const stop = new AbortController();
  const onAbort = () => {
    stop.abort(request.signal.reason);
    void command.kill("SIGKILL").catch(() => undefined);
  };
  if (request.signal.aborted) onAbort();
  else request.signal.addEventListener("abort", onAbort, { once: true });
  // `handle.kill(signal)`: Vercel's own kill, with exactly that signal (by number: the API takes any).
  request.onStarted?.({
    signal: async (name) => {
      const number = signalNumber(name);
      if (number === undefined) {
        throw new SandboxError("Validation", `vercel: unknown signal ${JSON.stringify(name)}`, {
          provider: VERCEL_PROVIDER_NAME,
          retryable: false,
        });
      }
      await command.kill(number);
    },
  });
  try {
    for await (const line of command.logs({ signal: stop.signal })) {
      if (line.stream === "stdout") callbacks.onStdout(line.data);
      else if (line.stream === "stderr") callbacks.onStderr(line.data);
    }
    request.signal.throwIfAborted();
    const finished = await command.wait({ signal: request.signal });
    return { exitCode: finished.exitCode };
  } catch (error) {
    if (request.signal.aborted) throw request.signal.reason;
    throw error;
  } finally {
    request.signal.removeEventListener("abort", onAbort);
  }
}

/** The streaming exec primitive: chunks arrive while the command runs. */
export async function execStream(
  sandbox: VercelDriverSandbox,
  request: DriverExecRequest & DriverOutputCallbacks,
): Promise<DriverExit> {
  const command = await startCommand(sandbox, request);
  return follow(command, request, request);
}

/** The buffered exec primitive: the same command, its output collected. */
export async function exec(
  sandbox: VercelDriverSandbox,
  request: DriverExecRequest,
): Promise<DriverExecResult> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const command = await startCommand(sandbox, request);
  const exit = await follow(command, request, {
    onStdout: (chunk) => stdout.push(String(chunk)),
    onStderr: (chunk) => stderr.push(String(chunk)),
  });
  return { ...exit, stdout: stdout.join(""), stderr: stderr.join("") };
}
