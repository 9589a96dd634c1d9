import type { ParsedCommandLine } from "./parse-command-line.js";
import { usageError } from "./usage-error.js";

/**
 * Checks the number of positionals (before `--`) and returns them; `names` are used in the message,
 * e.g. `["ID", "PORT"]`.
 */
export function expectPositionals(
  args: ParsedCommandLine,
  command: string,
  names: readonly string[],
  options: { min?: number; max?: number } = {},
): string[] {
  const min = options.min ?? names.length;
  const max = options.max ?? names.length;
  const got = args.positionals;
  if (got.length < min) {
    const missing = names.slice(got.length, Math.max(min, got.length + 1)).join(" ");
    throw usageError(`sbox ${command}: missing ${missing || "argument"} (see: sbox ${command} --help)`);
  }
  if (got.length > max) {
    throw usageError(
      `sbox ${command}: unexpected argument ${JSON.stringify(got[max])} (see: sbox ${command} --help)`,
    );
  }
  return [...got];
}

/** The command to run (after the id, or after `--`); a usage error when missing or empty. */
export function expectCommand(args: ParsedCommandLine, command: string, example = "ls -la"): string[] {
  if (args.rest === undefined || args.rest.length === 0) {
    throw usageError(`sbox ${command}: missing the command to run (e.g. sbox ${command} ${example})`);
  }
  if (args.rest[0] === "") throw usageError(`sbox ${command}: the command name is empty`);
  return [...args.rest];
}

/** Rejects a `--` section for commands that take none. */
export function expectNoCommand(args: ParsedCommandLine, command: string): void {
  if (args.rest !== undefined && args.rest.length > 0) {
    throw usageError(`sbox ${command} takes no command after --`);
  }
}
