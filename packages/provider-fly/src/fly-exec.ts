import {
  type DriverExecRequest,
  type DriverExecResult,
  NotSupportedError,
  SandboxError,
  signalName,
} from "@sbox/core/spec";
import type { FlyExecRequest, FlyExecResponse } from "./fly-api-types.js";
import type { FlyHttp } from "./fly-http.js";
import { execMachine } from "./fly-machines-api.js";
import { FLY_PROVIDER_NAME } from "./fly-names.js";

/**
 * The argv Fly runs. Fly's exec takes argv only: a shell snippet becomes `["sh", "-c", script]`. The
 * machine's create-time env is passed explicitly with `env NAME=VALUE...` in front, so every command sees
 * it whether or not Fly's exec inherits `config.env`; a command's own env (applied by the core inside the
 * script) comes later and wins.
 */
export function execArgv(
  command: DriverExecRequest["command"],
  env: Readonly<Record<string, string>>,
): string[] {
  const argv = "shell" in command ? ["sh", "-c", command.shell] : [...command.argv];
  if (argv.length === 0) throw new SandboxError("Validation", "exec needs a non-empty argv");
  const assignments = Object.entries(env).map(([key, value]) => `${key}=${value}`);
  if (assignments.length === 0) return argv;
  // `env` would read a program name containing "=" as one more assignment: hand such argv to exec "$@".
  const program = argv[0]!.includes("=") ? ["sh", "-c", 'exec "$@"', "sh", ...argv] : argv;
  return ["env", ...assignments, ...program];
}

/** Stdin as the text Fly's exec takes: valid UTF-8 bytes only (the core feeds binary stdin itself). */
function stdinText(stdin: DriverExecRequest["stdin"]): string | undefined {
  if (stdin === undefined) return undefined;
  if (!(stdin instanceof Uint8Array)) {
    throw new SandboxError(
      "Validation",
      "Fly exec takes stdin as a whole string, not a stream (the core feeds streams itself)",
    );
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(stdin);
  } catch {
    throw new SandboxError(
      "Validation",
      "Fly exec takes stdin as text: these bytes are not valid UTF-8 (the core feeds binary stdin)",
    );
  }
}

/** The buffered result of Fly's exec response: signal deaths reported as 128+n with the signal's name. */
export function execResultOf(response: FlyExecResponse | undefined): DriverExecResult {
  const stdout = typeof response?.stdout === "string" ? response.stdout : "";
  const stderr = typeof response?.stderr === "string" ? response.stderr : "";
  const signalNumber = typeof response?.exit_signal === "number" ? response.exit_signal : 0;
  const code = typeof response?.exit_code === "number" ? response.exit_code : undefined;
  if (signalNumber > 0) {
    const signal = signalName(signalNumber) ?? `SIG${signalNumber}`;
    return { stdout, stderr, exitCode: code !== undefined && code >= 0 ? code : 128 + signalNumber, signal };
  }
  if (code === undefined || !Number.isInteger(code) || code < 0) {
    throw new SandboxError(
      "Provider",
      `Fly's exec answered without a usable exit code (${String(code)})`,
      {},
    );
  }
  return { stdout, stderr, exitCode: code };
}

/**
 * The buffered exec primitive over `POST .../exec`. Fly's exec has no cwd, env or user: cwd and env are
 * applied by the core inside the command (E1, `flags.perCommandEnvCwd: false`); a user is refused. An
 * aborted call stops waiting for the answer; the command itself cannot be cancelled through the API (the
 * core's emulations kill what they start by process group).
 */
export async function flyExec(
  http: FlyHttp,
  machineId: string,
  env: Readonly<Record<string, string>>,
  request: DriverExecRequest,
  timeoutSeconds: number,
): Promise<DriverExecResult> {
  if (request.user !== undefined) {
    throw new NotSupportedError(
      "commands.run({ user })",
      FLY_PROVIDER_NAME,
      "Fly's exec runs as the machine's user",
    );
  }
  if (request.cwd !== undefined || request.env !== undefined) {
    throw new SandboxError(
      "Validation",
      "Fly's exec has no per-command cwd or env (the core puts them into the command)",
    );
  }
  const body: FlyExecRequest = { command: execArgv(request.command, env), timeout: timeoutSeconds };
  const stdin = stdinText(request.stdin);
  if (stdin !== undefined) body.stdin = stdin;
  return execResultOf(await execMachine(http, machineId, body, request.signal));
}
