/**
 * `POST .../exec` (`MachineExecRequest` → `flydv1.ExecResponse`): runs a command in a started machine and
 * answers its whole output at once. `command` is argv; the deprecated `cmd` string is split into words
 * like a shell would (quotes, backslashes). The real API gives up after about 30 seconds whatever
 * `timeout` asks for (408 Request Timeout) — so does the emulator, and the command is killed.
 */
import { SandboxError, signalNumber } from "@sbox/core/spec";
import type { FlyMachine } from "./fly-machine.js";

/** How long one exec may run, in seconds: Fly's own limit. */
export const FLY_EXEC_LIMIT_SECONDS = 30;

/** An exec answer: the status and body to send. */
export interface FlyExecAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** Splits a command line into words (single and double quotes, backslash escapes); `undefined` when a quote is open. */
export function splitWords(line: string): string[] | undefined {
  const words: string[] = [];
  let current = "";
  let inWord = false;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else current += c;
      continue;
    }
    if (quote === '"') {
      if (c === '"') quote = undefined;
      else if (c === "\\" && i + 1 < line.length && '"\\$`'.includes(line[i + 1]!)) current += line[++i];
      else current += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === "\\" && i + 1 < line.length) {
      current += line[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(current);
      current = "";
      inWord = false;
    } else {
      current += c;
      inWord = true;
    }
  }
  if (quote) return undefined;
  if (inWord) words.push(current);
  return words;
}

function badRequest(message: string): FlyExecAnswer {
  return { status: 400, body: { error: message } };
}

/** Runs one exec request on `machine`. */
export async function execOnMachine(
  machine: FlyMachine,
  body: Record<string, unknown>,
): Promise<FlyExecAnswer> {
  const sandbox = machine.running();
  if (!sandbox) {
    return {
      status: 412,
      body: {
        error: `failed_precondition: machine ${machine.id} is ${machine.state}; exec needs a started machine`,
      },
    };
  }
  let argv: string[] | undefined;
  if (body.command !== undefined) {
    if (
      !Array.isArray(body.command) ||
      !body.command.every((w) => typeof w === "string") ||
      body.command.length === 0
    ) {
      return badRequest("command must be a non-empty list of strings");
    }
    argv = body.command as string[];
  } else if (typeof body.cmd === "string") {
    argv = splitWords(body.cmd);
    if (!argv) return badRequest("cmd has an unterminated quote");
  }
  if (!argv || argv.length === 0) return badRequest("command is required");
  if (argv.some((word) => word.includes("\0"))) return badRequest("command contains a NUL byte");
  if (body.container !== undefined && body.container !== "") {
    return badRequest("this machine has no containers (config.containers is not emulated)");
  }
  if (body.stdin !== undefined && typeof body.stdin !== "string") return badRequest("stdin must be a string");
  const requested = body.timeout ?? FLY_EXEC_LIMIT_SECONDS;
  if (typeof requested !== "number" || !Number.isInteger(requested) || requested < 0) {
    return badRequest("timeout must be a whole number of seconds");
  }
  const seconds = requested === 0 ? FLY_EXEC_LIMIT_SECONDS : Math.min(requested, FLY_EXEC_LIMIT_SECONDS);
  try {
    const result = await sandbox.commands.run(argv, {
      env: machine.flyEnv(),
      timeoutMs: seconds * 1000,
      ...(typeof body.stdin === "string" ? { stdin: body.stdin } : {}),
    });
    const answer: Record<string, unknown> = {
      stdout: result.stdout,
      stderr: result.stderr,
      exit_code: result.exitCode,
    };
    if (result.signal) answer.exit_signal = signalNumber(result.signal) ?? 0;
    return { status: 200, body: answer };
  } catch (error) {
    if (SandboxError.isInstance(error) && error.code === "Timeout") {
      return {
        status: 408,
        body: {
          error: `deadline_exceeded: the command ran longer than ${seconds}s${requested > FLY_EXEC_LIMIT_SECONDS ? ` (exec allows at most ${FLY_EXEC_LIMIT_SECONDS}s whatever timeout asks for)` : ""}`,
        },
      };
    }
    return {
      status: 500,
      body: { error: `exec failed: ${error instanceof Error ? error.message : String(error)}` },
    };
  }
}
