import { SandboxError } from "../errors/sandbox-error.js";
import type { DriverCommand } from "../spec/provider-spec.js";

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Quotes one word for a POSIX shell: the result, when read by `sh`, is exactly `value` — quotes, newlines,
 * `$()`, backticks, globs and unicode included. NUL cannot be passed through a command line and is refused.
 */
export function shellQuote(value: string): string {
  if (value.includes("\0")) {
    throw new SandboxError("Validation", "a shell word cannot contain a NUL character", { retryable: false });
  }
  if (value !== "" && /^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Quotes every word of an argv and joins them into one shell command line. */
export function shellQuoteArgv(argv: readonly string[]): string {
  if (argv.length === 0)
    throw new SandboxError("Validation", "a command needs at least one word", { retryable: false });
  return argv.map(shellQuote).join(" ");
}

/** Throws `Validation` unless `key` is a portable environment variable name. */
export function assertEnvKey(key: string): void {
  if (!ENV_KEY.test(key)) {
    throw new SandboxError(
      "Validation",
      `invalid environment variable name ${JSON.stringify(key)}: must match [A-Za-z_][A-Za-z0-9_]*`,
      { retryable: false },
    );
  }
}

/** Validates env keys and values (no NUL) and returns them unchanged. */
export function validateEnv(env: Readonly<Record<string, string>> | undefined): void {
  if (!env) return;
  for (const [key, value] of Object.entries(env)) {
    assertEnvKey(key);
    if (typeof value !== "string") {
      throw new SandboxError("Validation", `environment variable ${key} must be a string`, {
        retryable: false,
      });
    }
    if (value.includes("\0")) {
      throw new SandboxError("Validation", `environment variable ${key} contains a NUL character`, {
        retryable: false,
      });
    }
  }
}

/** `export K='v'; ...` lines for an env map (keys validated, values quoted). */
export function shellExports(env: Readonly<Record<string, string>> | undefined): string {
  if (!env) return "";
  validateEnv(env);
  return Object.entries(env)
    .map(([key, value]) => `export ${key}=${shellQuote(value)}\n`)
    .join("");
}

/**
 * The shell text of a driver command, for providers whose exec takes only a string: a shell snippet is
 * returned as is, argv is quoted word by word so no shell interpretation happens.
 */
export function shellCommandOf(command: DriverCommand): string {
  return "shell" in command ? command.shell : shellQuoteArgv(command.argv);
}
