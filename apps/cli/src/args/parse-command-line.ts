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

/** What the parser needs to know about a command, beyond its options. */
export interface CommandShape {
  readonly options: OptionSpecs;
  /**
   * Where the command to run starts when the user writes no `--`: after this many positionals (0 for
   * `run`, 1 for `exec ID`), the first word that is not one of the command's options begins the command,
   * and it and everything after it are the command, verbatim (`sbox exec ID ls -la`).
   */
  readonly commandAfterPositionals?: number | undefined;
  /** The option that stands in for the first positional (the sandbox id): `--name`. */
  readonly idOption?: string | undefined;
}

/** The long names of `options` that take a value, by every spelling (`--name`, `-n`). */
function valueSpellings(options: OptionSpecs): Set<string> {
  const spellings = new Set<string>();
  for (const [name, spec] of Object.entries(options)) {
    if (spec.type !== "string") continue;
    spellings.add(`--${name}`);
    if (spec.short) spellings.add(`-${spec.short}`);
  }
  return spellings;
}

/**
 * Finds the command name: the first token that is neither an option nor the value of an option that
 * takes one — options of any command count, so `sbox -p docker -t IMG run ...` finds `run` (a
 * command's own options may come before its name, as global ones may come after it). Returns its
 * index, or -1 when there is none before `--`.
 */
export function findCommandIndex(
  argv: readonly string[],
  commandOptions: readonly OptionSpecs[] = [],
  isCommandName: (token: string) => boolean = () => false,
): number {
  const valueOptions = valueSpellings(GLOBAL_OPTIONS);
  for (const options of commandOptions)
    for (const spelling of valueSpellings(options)) valueOptions.add(spelling);
  for (let index = 0; index < argv.length; index += 1) {
    const token = argv[index]!;
    if (token === "--") return -1;
    if (valueOptions.has(token)) {
      // The value of an option, unless the option was given last before the command name (a mistake
      // reported by the command's own parser, which knows whether it takes a value).
      const next = argv[index + 1];
      if (next !== undefined && !isCommandName(next)) index += 1;
      continue;
    }
    if (token.startsWith("-") && token !== "-") continue;
    return index;
  }
  return -1;
}

/**
 * Where the options of a command that runs a command end: the index of the word that starts the
 * command to run, and whether a `--` stands right before it (and is not part of it). Undefined when no
 * command word is there (so a `--` later, if any, decides, as for every other command).
 */
function commandStart(
  argv: readonly string[],
  options: OptionSpecs,
  shape: CommandShape,
): { index: number; terminator: boolean } | undefined {
  const values = valueSpellings(options);
  let positionals = 0;
  let wanted = shape.commandAfterPositionals ?? 0;
  for (let index = 0; index < argv.length; index += 1) {
    const token = argv[index]!;
    if (token === "--") return { index: index + 1, terminator: true };
    if (token.startsWith("-") && token !== "-") {
      if (shape.idOption && (token === `--${shape.idOption}` || token.startsWith(`--${shape.idOption}=`)))
        wanted = Math.max(0, (shape.commandAfterPositionals ?? 0) - 1);
      if (values.has(token)) index += 1;
      // An unknown option before the command is the user's mistake: the strict parser reports it.
      continue;
    }
    if (positionals >= wanted) return { index, terminator: false };
    positionals += 1;
  }
  return undefined;
}

function parseErrorMessage(error: unknown, commandName: string): string {
  const code = (error as { code?: unknown }).code;
  const text = error instanceof Error ? (error.message.split("\n")[0] ?? "") : String(error);
  // The option as node:util quotes it, e.g. 'Option \'-t, --template <value>\' argument missing'.
  const quoted = /'([^']+)'/.exec(text)?.[1] ?? "";
  const option =
    quoted
      .replace(/ <value>$/, "")
      .split(", ")
      .pop() ?? quoted;
  const help = `(see: sbox ${commandName} --help)`;
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION")
    return `sbox ${commandName}: unknown option ${option} ${help}`;
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    return text.includes("does not take an argument")
      ? `sbox ${commandName}: option ${option} takes no value ${help}`
      : `sbox ${commandName}: option ${option} needs a value ${help}`;
  }
  return `sbox ${commandName}: ${text.replace(/\.$/, "")} ${help}`;
}

/**
 * Parses the tokens of one command with `node:util` parseArgs (strict: unknown options are usage errors).
 * Only the first `--` ends option parsing; the tokens after it are returned verbatim in `rest`, so a
 * command like `sh -c 'exit 42'` reaches the sandbox unchanged. For commands that run a command
 * (`shape.commandAfterPositionals`), the command may also follow without `--`: everything from its first
 * word on is `rest`.
 */
export function parseCommandLine(
  argv: readonly string[],
  options: OptionSpecs,
  commandName: string,
  shape: CommandShape = { options },
): ParsedCommandLine {
  const all = { ...GLOBAL_OPTIONS, ...options };
  let before: readonly string[];
  let rest: readonly string[] | undefined;
  const start = shape.commandAfterPositionals === undefined ? undefined : commandStart(argv, all, shape);
  if (start) {
    before = argv.slice(0, start.terminator ? start.index - 1 : start.index);
    rest = argv.slice(start.index);
  } else {
    const terminator = argv.indexOf("--");
    before = terminator === -1 ? argv : argv.slice(0, terminator);
    rest = terminator === -1 ? undefined : argv.slice(terminator + 1);
  }
  const config: Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }> = {};
  for (const [name, spec] of Object.entries(all)) {
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
    throw usageError(parseErrorMessage(error, commandName));
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
