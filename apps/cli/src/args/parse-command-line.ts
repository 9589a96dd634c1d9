import { parseArgs } from "node:util";
import { GLOBAL_OPTIONS, type OptionSpecs } from "./option-spec.js";
import { usageError } from "./usage-error.js";

/** Values of parsed options by long name. */
export type OptionValues = Record<string, string | boolean | string[] | boolean[] | undefined>;

/** A command line split into its parts. */
export interface ParsedCommandLine {
  /** Positionals before `--`. */
  readonly positionals: readonly string[];
  /** Everything after the first `--`, verbatim (the command to run in a sandbox), or undefined without `--`. */
  readonly rest: readonly string[] | undefined;
  readonly values: OptionValues;
}

/**
 * Finds the command name: the first token that is neither an option nor the value of a global option
 * that takes one. Returns its index, or -1 when there is none before `--`.
 */
export function findCommandIndex(argv: readonly string[]): number {
  const valueOptions = new Set<string>();
  for (const [name, spec] of Object.entries(GLOBAL_OPTIONS)) {
    if (spec.type === "string") {
      valueOptions.add(`--${name}`);
      if (spec.short) valueOptions.add(`-${spec.short}`);
    }
  }
  for (let index = 0; index < argv.length; index += 1) {
    const token = argv[index]!;
    if (token === "--") return -1;
    if (valueOptions.has(token)) {
      index += 1;
      continue;
    }
    if (token.startsWith("-") && token !== "-") continue;
    return index;
  }
  return -1;
}

/**
 * Parses the tokens of one command with `node:util` parseArgs (strict: unknown options are usage errors).
 * Only the first `--` ends option parsing; the tokens after it are returned verbatim in `rest`, so a
 * command like `sh -c 'exit 42'` reaches the sandbox unchanged.
 */
export function parseCommandLine(
  argv: readonly string[],
  options: OptionSpecs,
  commandName: string,
): ParsedCommandLine {
  const terminator = argv.indexOf("--");
  const before = terminator === -1 ? argv : argv.slice(0, terminator);
  const rest = terminator === -1 ? undefined : argv.slice(terminator + 1);
  const config: Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }> = {};
  for (const [name, spec] of Object.entries({ ...GLOBAL_OPTIONS, ...options })) {
    config[name] = {
      type: spec.type,
      ...(spec.short ? { short: spec.short } : {}),
      ...(spec.multiple ? { multiple: true } : {}),
    };
  }
  try {
    const parsed = parseArgs({ args: [...before], options: config, allowPositionals: true, strict: true });
    return { positionals: parsed.positionals, rest, values: parsed.values as OptionValues };
  } catch (error) {
    const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
    throw usageError(`${message?.replace(/\.$/, "")} (see: sbox ${commandName} --help)`);
  }
}

/** A string option's value, when given. */
export function stringOption(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === "string" ? value : undefined;
}

/** A repeatable string option's values (empty when not given). */
export function stringListOption(values: OptionValues, name: string): string[] {
  const value = values[name];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === "string");
  return typeof value === "string" ? [value] : [];
}

/** A boolean option's value (false when not given). */
export function booleanOption(values: OptionValues, name: string): boolean {
  return values[name] === true;
}
