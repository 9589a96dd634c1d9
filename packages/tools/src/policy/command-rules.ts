/**
 * Argv-aware command rules. A pattern such as `rm -rf /` is read as a command name, a set of flags and
 * leading positional arguments, and compared with each simple command a shell line runs, never with the
 * line as a substring: `echo "rm -rf /"` does not match it, `sudo /bin/rm -f -r /` does.
 */
import { type ParsedShell, parseShell, type ShellWord, splitPatternWords } from "./shell-parse.js";

/** What a rule, or a whole policy, decides about a call. */
export type PolicyAction = "allow" | "deny" | "ask";

/** The command rules of a policy. */
export interface CommandRules {
  /** Commands that are always denied, e.g. `"rm -rf /"`, `"curl"`, `"git push --force"`. */
  deny?: readonly string[] | undefined;
  /** Commands that need approval. */
  ask?: readonly string[] | undefined;
  /**
   * When given, the only commands allowed (an allow-list): every other command is denied. Wrappers such
   * as `sudo`, `env` or `sh -c` are looked through: their wrapped command is what must be listed.
   */
  allow?: readonly string[] | undefined;
}

/** A compiled pattern. */
interface CommandPattern {
  readonly source: string;
  readonly name: string;
  readonly shortFlags: ReadonlySet<string>;
  readonly longFlags: ReadonlySet<string>;
  readonly positionals: readonly string[];
}

/** The outcome of checking a command line. */
export interface CommandDecision {
  readonly action: PolicyAction;
  readonly reason: string;
}

function baseName(text: string): string {
  const slash = text.lastIndexOf("/");
  return slash === -1 ? text : text.slice(slash + 1);
}

/** Compiles one pattern; throws on an empty one. */
export function compileCommandPattern(source: string): CommandPattern {
  const words = splitPatternWords(source);
  if (words.length === 0 || words[0] === undefined || words[0] === "") {
    throw new Error(`command pattern ${JSON.stringify(source)} is empty`);
  }
  const shortFlags = new Set<string>();
  const longFlags = new Set<string>();
  const positionals: string[] = [];
  let endOfFlags = false;
  for (const word of words.slice(1)) {
    if (!endOfFlags && word === "--") {
      endOfFlags = true;
      continue;
    }
    if (!endOfFlags && word.startsWith("--") && word.length > 2) longFlags.add(word.slice(2).split("=")[0]!);
    else if (!endOfFlags && word.startsWith("-") && word.length > 1)
      for (const flag of word.slice(1)) shortFlags.add(flag);
    else positionals.push(word);
  }
  return { source, name: words[0], shortFlags, longFlags, positionals };
}

/** Flags and positionals of a command's arguments; dynamic words are kept apart. */
function argumentsOf(argv: readonly ShellWord[]): {
  short: Set<string>;
  long: Set<string>;
  positionals: ShellWord[];
  dynamicFlags: boolean;
} {
  const short = new Set<string>();
  const long = new Set<string>();
  const positionals: ShellWord[] = [];
  let dynamicFlags = false;
  let endOfFlags = false;
  for (const word of argv.slice(1)) {
    if (word.dynamic) {
      // A word only known at run time could be any flag or any argument.
      dynamicFlags = true;
      positionals.push(word);
      continue;
    }
    if (!endOfFlags && word.text === "--") {
      endOfFlags = true;
      continue;
    }
    if (!endOfFlags && word.text.startsWith("--") && word.text.length > 2)
      long.add(word.text.slice(2).split("=")[0]!);
    else if (!endOfFlags && word.text.startsWith("-") && word.text.length > 1)
      for (const flag of word.text.slice(1)) short.add(flag);
    else positionals.push(word);
  }
  return { short, long, positionals, dynamicFlags };
}

/**
 * Whether `argv` matches `pattern`. In `restrict` mode (deny and ask rules) a word only known at run time
 * may be anything, so it matches; in `permit` mode (allow rules) it only matches a `*`.
 */
function matches(pattern: CommandPattern, argv: readonly ShellWord[], mode: "restrict" | "permit"): boolean {
  const head = argv[0];
  if (!head) return false;
  if (head.dynamic || head.glob) return mode === "restrict";
  const name = pattern.name.includes("/") ? head.text : baseName(head.text);
  if (name !== pattern.name) return false;
  const args = argumentsOf(argv);
  const wild = mode === "restrict" && args.dynamicFlags;
  for (const flag of pattern.shortFlags) if (!args.short.has(flag) && !wild) return false;
  for (const flag of pattern.longFlags) if (!args.long.has(flag) && !wild) return false;
  for (let i = 0; i < pattern.positionals.length; i++) {
    const token = pattern.positionals[i]!;
    if (token === "**") return true;
    const word = args.positionals[i];
    if (!word) return false;
    if (token === "*") continue;
    if (word.dynamic || word.glob) {
      if (mode === "restrict") continue;
      return false;
    }
    if (word.text !== token) return false;
  }
  return true;
}

function display(argv: readonly ShellWord[]): string {
  const text = argv.map((w) => w.text).join(" ");
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/** Compiled command rules. */
export class CommandPolicy {
  readonly #deny: CommandPattern[];
  readonly #ask: CommandPattern[];
  readonly #allow: CommandPattern[] | undefined;

  constructor(rules: CommandRules = {}) {
    this.#deny = (rules.deny ?? []).map(compileCommandPattern);
    this.#ask = (rules.ask ?? []).map(compileCommandPattern);
    this.#allow = rules.allow === undefined ? undefined : rules.allow.map(compileCommandPattern);
  }

  /** True when no rule is set, so every command is allowed without reading it. */
  get empty(): boolean {
    return this.#deny.length === 0 && this.#ask.length === 0 && this.#allow === undefined;
  }

  /** Decides about a shell command line. Deny beats ask beats allow; what cannot be read is asked. */
  check(commandLine: string): CommandDecision {
    if (this.empty) return { action: "allow", reason: "no command rules" };
    return this.checkParsed(parseShell(commandLine));
  }

  /** Decides about an argv command (no shell). */
  checkArgv(argv: readonly string[]): CommandDecision {
    if (this.empty) return { action: "allow", reason: "no command rules" };
    const words = argv.map((text) => ({ text, dynamic: false, glob: false }));
    return this.checkParsed({ commands: [{ argv: words, wrapper: false }], problems: [] });
  }

  /** Decides about an already parsed line. */
  checkParsed(parsed: ParsedShell): CommandDecision {
    for (const command of parsed.commands) {
      const rule = this.#deny.find((pattern) => matches(pattern, command.argv, "restrict"));
      if (rule) {
        return {
          action: "deny",
          reason: `"${display(command.argv)}" matches the denied command "${rule.source}"`,
        };
      }
    }
    for (const command of parsed.commands) {
      const rule = this.#ask.find((pattern) => matches(pattern, command.argv, "restrict"));
      if (rule) {
        return {
          action: "ask",
          reason: `"${display(command.argv)}" matches the command "${rule.source}", which needs approval`,
        };
      }
    }
    if (parsed.problems.length > 0) {
      return {
        action: "ask",
        reason: `the command cannot be checked against the rules: ${parsed.problems[0]}`,
      };
    }
    if (this.#allow !== undefined) {
      const allow = this.#allow;
      for (const command of parsed.commands) {
        if (command.wrapper || command.speculative) continue;
        if (!allow.some((pattern) => matches(pattern, command.argv, "permit"))) {
          return { action: "deny", reason: `"${display(command.argv)}" is not an allowed command` };
        }
      }
    }
    return { action: "allow", reason: "allowed by the command rules" };
  }
}
