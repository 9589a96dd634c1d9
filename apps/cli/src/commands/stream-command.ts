import { fstatSync } from "node:fs";
import { constants } from "node:os";
import { Readable } from "node:stream";
import type { RunOptions, Sandbox } from "@sbox/core";
import { NotSupportedError, SandboxError } from "@sbox/core";
import type { OptionSpecs } from "../args/option-spec.js";
import type { OptionValues } from "../args/parse-command-line.js";
import { booleanOption, stringListOption, stringOption } from "../args/parse-command-line.js";
import { parseDuration, parseEnv } from "../args/value-parsers.js";
import type { CliContext } from "../cli-context.js";
import { EXIT_CODES } from "../output/exit-codes.js";
import { formatDuration } from "../output/format.js";

/** Options of a command run in a sandbox (`run`, `exec`). */
export const COMMAND_OPTIONS: OptionSpecs = {
  cwd: { type: "string", short: "w", valueName: "DIR", description: "working directory of the command" },
  timeout: {
    type: "string",
    valueName: "DURATION",
    description: "kill the command's process tree after this long (exit code 124)",
  },
  user: {
    type: "string",
    short: "u",
    valueName: "USER",
    description: "user to run as, where the provider supports it",
  },
  "no-stdin": { type: "boolean", description: "do not pass this process's stdin to the command" },
};

/** What to run and how, read from `COMMAND_OPTIONS`. */
export interface CommandRunSettings {
  readonly cwd?: string | undefined;
  readonly timeoutMs?: number | undefined;
  readonly user?: string | undefined;
  readonly env?: Record<string, string> | undefined;
  /** Pass stdin through: only when it is not a terminal and `--no-stdin` was not given. */
  readonly pipeStdin: boolean;
}

/** Reads `COMMAND_OPTIONS` (and `--env` when `withEnv`). */
export function commandSettings(
  context: CliContext,
  values: OptionValues,
  withEnv: boolean,
): CommandRunSettings {
  const timeout = stringOption(values, "timeout");
  const envItems = withEnv ? stringListOption(values, "env") : [];
  return {
    cwd: stringOption(values, "cwd"),
    timeoutMs: timeout === undefined ? undefined : parseDuration(timeout, "--timeout"),
    user: stringOption(values, "user"),
    env: envItems.length > 0 ? parseEnv(envItems, context.io.env) : undefined,
    pipeStdin: context.io.stdin.isTTY !== true && !booleanOption(values, "no-stdin"),
  };
}

/** True when stdin is `/dev/null` (or another character device that is not a terminal): nothing to pass. */
function stdinIsNullDevice(stdin: NodeJS.ReadableStream): boolean {
  const fd = (stdin as { fd?: unknown }).fd;
  if (typeof fd !== "number") return false;
  try {
    return fstatSync(fd).isCharacterDevice();
  } catch {
    return true;
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream)
    chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk));
  return new Uint8Array(Buffer.concat(chunks));
}

/** The exit code of a finished command: its own, or 128 + N when signal N ended it. */
export function exitCodeOf(result: { exitCode: number; signal?: string | undefined }): number {
  if (result.signal) {
    const number = (constants.signals as Record<string, number | undefined>)[result.signal];
    if (number !== undefined) return 128 + number;
  }
  return result.exitCode;
}

/**
 * Runs `argv` in the sandbox with its output streamed live to this process's stdout/stderr and, when
 * stdin is piped, stdin streamed in (as a stream where the provider has the `stdin` capability, read
 * whole otherwise). Returns the command's exit code; an exceeded `--timeout` returns 124 after an error
 * line. Aborting `signal` kills the command's tree and rejects with `Aborted`.
 */
export async function streamCommand(
  context: CliContext,
  sandbox: Sandbox,
  argv: readonly string[],
  settings: CommandRunSettings,
  signal: AbortSignal,
): Promise<number> {
  const { stdout, stderr } = context.io;
  const options: RunOptions = {
    signal,
    collectOutput: false,
    onStdout: (chunk) => {
      stdout.write(chunk);
    },
    onStderr: (chunk) => {
      stderr.write(chunk);
    },
    ...(settings.cwd === undefined ? {} : { cwd: settings.cwd }),
    ...(settings.timeoutMs === undefined ? {} : { timeoutMs: settings.timeoutMs }),
    ...(settings.user === undefined ? {} : { user: settings.user }),
    ...(settings.env === undefined ? {} : { env: settings.env }),
  };
  if (settings.pipeStdin && !stdinIsNullDevice(context.io.stdin)) {
    const stdin = context.io.stdin;
    if (sandbox.capabilities.map.stdin === "unsupported") {
      // The provider cannot take input. Empty input loses nothing; any other input must not be dropped
      // silently, so it is an error (reading to the end is how to tell the two apart).
      const input = await readAll(stdin);
      if (input.byteLength > 0) {
        throw new NotSupportedError(
          "stdin",
          sandbox.provider,
          `${input.byteLength} bytes were piped to sbox but cannot be passed to the command (use --no-stdin to ignore them)`,
        );
      }
    } else {
      options.stdin = Readable.toWeb(stdin as Readable) as ReadableStream<Uint8Array>;
    }
  }
  try {
    const result = await sandbox.commands.run(argv, options);
    return exitCodeOf(result);
  } catch (error) {
    if (
      settings.timeoutMs !== undefined &&
      SandboxError.isInstance(error) &&
      error.code === "Timeout" &&
      !signal.aborted
    ) {
      context.io.stderr.write(
        `${context.err.red(context.err.bold("error[Timeout]"))}: the command exceeded --timeout ${formatDuration(settings.timeoutMs)} and was killed\n`,
      );
      return EXIT_CODES.commandTimeout;
    }
    throw error;
  }
}
