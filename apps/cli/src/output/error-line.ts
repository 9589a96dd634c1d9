import { SandboxError, toSandboxError } from "@sbox/core";
import { isUsageError } from "../args/usage-error.js";
import type { Colours } from "./colour.js";
import { EXIT_CODES, exitCodeForErrorCode } from "./exit-codes.js";

/** Anything thrown, as the SandboxError the CLI reports. */
export function asSandboxError(error: unknown): SandboxError {
  if (SandboxError.isInstance(error)) return error;
  return toSandboxError(error, { fallbackCode: "Provider" });
}

/**
 * The one line printed for a failure: `error[NotFound]: sandbox local:abc does not exist`. Messages that
 * span lines are joined, so scripts can rely on one line. With `debug`, the stack and the chain of causes
 * follow on later lines.
 */
export function formatErrorLine(error: unknown, options: { colours: Colours; debug: boolean }): string {
  const sandboxError = asSandboxError(error);
  const message = sandboxError.message
    .split(/\r?\n/)
    .map((part) => part.trim())
    .filter((part) => part.length > 0)
    .join("; ");
  // A wrong command line is labelled as what it is (exit code 2), not as a Validation error of a sandbox.
  const label = isUsageError(error) ? "Usage" : sandboxError.code;
  const head = `${options.colours.red(options.colours.bold(`error[${label}]`))}: ${message || "(no message)"}`;
  if (!options.debug) return `${head}\n`;
  const lines = [head];
  if (sandboxError.stack) lines.push(options.colours.dim(sandboxError.stack));
  let cause: unknown = sandboxError.cause;
  for (let depth = 0; cause !== undefined && depth < 8; depth += 1) {
    const text = cause instanceof Error ? (cause.stack ?? `${cause.name}: ${cause.message}`) : String(cause);
    lines.push(options.colours.dim(`caused by: ${text}`));
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return `${lines.join("\n")}\n`;
}

/** The exit code for anything thrown. */
export function exitCodeForError(error: unknown): number {
  if (isUsageError(error)) return EXIT_CODES.usage;
  return exitCodeForErrorCode(asSandboxError(error).code);
}
