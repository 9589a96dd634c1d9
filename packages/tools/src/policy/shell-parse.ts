/**
 * A static reading of a POSIX shell command line, enough to hold it to argv-aware rules: which simple
 * commands it runs (including those inside `$(...)`, backticks, subshells, `sh -c '...'`, `eval`,
 * `find -exec` and wrappers such as `sudo`, `env`, `timeout` or `xargs`), with every word marked when its
 * value is only known at run time. What cannot be read statically is reported as a problem, so a policy
 * can fail closed instead of guessing.
 */

/** One shell word after quote removal. */
export interface ShellWord {
  /** The literal value (quotes removed, escapes applied); expansions are kept as written. */
  readonly text: string;
  /** True when the value depends on an expansion (`$x`, `$(...)`, backticks, `~`). */
  readonly dynamic: boolean;
  /** True when it holds unquoted glob characters (`*`, `?`, `[`). */
  readonly glob: boolean;
}

/** One simple command that the line would run. */
export interface ShellCommand {
  /** Its words, assignments and redirections removed. */
  readonly argv: readonly ShellWord[];
  /** True for a wrapper (`sudo`, `env`, `sh -c`, ...) whose wrapped command is listed separately. */
  readonly wrapper: boolean;
  /**
   * True when the text may not run as a command at all: the inside of `$((...))`, which a shell reads as
   * arithmetic, or as a command in a subshell when it is not valid arithmetic. Deny and ask rules see it;
   * an allow-list does not require it.
   */
  readonly speculative?: boolean | undefined;
}

/** What {@link parseShell} found. */
export interface ParsedShell {
  readonly commands: readonly ShellCommand[];
  /** Why some of the line cannot be checked statically (empty when all of it can). */
  readonly problems: readonly string[];
}

type Token = { type: "word"; word: ShellWord } | { type: "op"; op: string };

const MAX_DEPTH = 32;
const OPERATORS = [
  ";;&",
  "&>>",
  "<<<",
  "<<-",
  "&&",
  "||",
  ";;",
  ";&",
  "|&",
  "<<",
  ">>",
  ">|",
  "<>",
  ">&",
  "<&",
  "&>",
  "|",
  "&",
  ";",
  "(",
  ")",
  "<",
  ">",
];
const REDIRECTIONS = new Set(["<", ">", ">>", ">|", "<>", ">&", "<&", "&>", "&>>", "<<", "<<-", "<<<"]);
const SEPARATORS = new Set([";", "&", "&&", "||", "|", "|&", "(", ")", ";;", ";&", ";;&", "\n"]);
const RESERVED = new Set([
  "if",
  "then",
  "else",
  "elif",
  "fi",
  "do",
  "done",
  "while",
  "until",
  "!",
  "{",
  "}",
  "time",
]);
const SHELLS = new Set(["sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", "yash", "busybox-sh"]);

class Scanner {
  readonly problems: string[] = [];
  readonly nested: ShellCommand[] = [];
  readonly tokens: Token[] = [];
  #pos = 0;
  readonly #heredocs: { delimiter: string; stripTabs: boolean; quoted: boolean }[] = [];

  constructor(
    readonly source: string,
    readonly depth: number,
  ) {}

  scan(): void {
    const s = this.source;
    while (this.#pos < s.length) {
      const c = s[this.#pos]!;
      if (c === " " || c === "\t") {
        this.#pos++;
        continue;
      }
      if (c === "\\" && s[this.#pos + 1] === "\n") {
        this.#pos += 2;
        continue;
      }
      if (c === "\n") {
        this.#pos++;
        this.tokens.push({ type: "op", op: "\n" });
        this.#readHeredocBodies();
        continue;
      }
      if (c === "#") {
        while (this.#pos < s.length && s[this.#pos] !== "\n") this.#pos++;
        continue;
      }
      // Process substitution <(...) and >(...): commands of their own.
      if ((c === "<" || c === ">") && s[this.#pos + 1] === "(") {
        const inner = this.#balanced(this.#pos + 2, "(", ")");
        this.#nestedScript(s.slice(this.#pos + 2, inner));
        this.#pos = inner + 1;
        this.tokens.push({ type: "word", word: { text: "<(...)", dynamic: true, glob: false } });
        continue;
      }
      const op = OPERATORS.find((candidate) => s.startsWith(candidate, this.#pos));
      if (op) {
        this.#pos += op.length;
        this.tokens.push({ type: "op", op });
        if (op === "<<" || op === "<<-") this.#registerHeredoc(op === "<<-");
        continue;
      }
      const word = this.#readWord();
      // A word of digits right before a redirection is a file descriptor, not an argument.
      if (/^\d+$/.test(word.text) && !word.dynamic && /^[<>]/.test(s.slice(this.#pos, this.#pos + 1)))
        continue;
      this.tokens.push({ type: "word", word });
    }
    if (this.#heredocs.length > 0) this.problems.push("a here-document is not terminated");
  }

  #registerHeredoc(stripTabs: boolean): void {
    const s = this.source;
    while (s[this.#pos] === " " || s[this.#pos] === "\t") this.#pos++;
    const start = this.#pos;
    const word = this.#readWord();
    const raw = s.slice(start, this.#pos);
    this.tokens.push({ type: "word", word });
    this.#heredocs.push({ delimiter: word.text, stripTabs, quoted: /['"\\]/.test(raw) });
  }

  #readHeredocBodies(): void {
    const s = this.source;
    while (this.#heredocs.length > 0) {
      const doc = this.#heredocs.shift()!;
      for (;;) {
        if (this.#pos >= s.length) {
          this.problems.push("a here-document is not terminated");
          return;
        }
        let end = s.indexOf("\n", this.#pos);
        if (end === -1) end = s.length;
        let line = s.slice(this.#pos, end);
        this.#pos = Math.min(end + 1, s.length);
        if (doc.stripTabs) line = line.replace(/^\t+/, "");
        if (line === doc.delimiter) break;
        if (!doc.quoted && (line.includes("$(") || line.includes("`"))) {
          this.problems.push("a here-document runs command substitutions");
        }
      }
    }
  }

  /** Index of the character that closes the group opened just before `from`, skipping quotes. */
  #balanced(from: number, open: string, close: string): number {
    const s = this.source;
    let depth = 1;
    let i = from;
    // Depths at which a `case ... in` is open: there a ")" ends a pattern, not the group.
    const cases: number[] = [];
    const boundary = (at: number) => at < 0 || /[\s;&|()]/.test(s[at]!);
    const keyword = (word: string) =>
      open === "(" &&
      s.startsWith(word, i) &&
      boundary(i - 1) &&
      (i + word.length >= s.length || boundary(i + word.length));
    while (i < s.length) {
      const c = s[i]!;
      if (c === "\\") {
        i += 2;
        continue;
      }
      if (c === "'") {
        const end = s.indexOf("'", i + 1);
        if (end === -1) break;
        i = end + 1;
        continue;
      }
      if (c === '"') {
        i = this.#skipDoubleQuoted(i + 1);
        continue;
      }
      if (c === "`") {
        const end = this.#backtickEnd(i + 1);
        i = end + 1;
        continue;
      }
      if (c === "#" && boundary(i - 1)) {
        while (i < s.length && s[i] !== "\n") i++;
        continue;
      }
      if (keyword("case")) {
        cases.push(depth);
        i += 4;
        continue;
      }
      if (keyword("esac") && cases.length > 0) {
        cases.pop();
        i += 4;
        continue;
      }
      if (c === open) depth++;
      else if (c === close) {
        if (cases.length > 0 && cases[cases.length - 1] === depth) {
          i++;
          continue;
        }
        depth--;
        if (depth === 0) return i;
      }
      i++;
    }
    this.problems.push(`an unclosed "${open}"`);
    return s.length;
  }

  #skipDoubleQuoted(from: number): number {
    const s = this.source;
    let i = from;
    while (i < s.length) {
      const c = s[i]!;
      if (c === "\\") {
        i += 2;
        continue;
      }
      if (c === '"') return i + 1;
      if (c === "$" && s[i + 1] === "(") {
        i = this.#balanced(i + 2, "(", ")") + 1;
        continue;
      }
      if (c === "`") {
        i = this.#backtickEnd(i + 1) + 1;
        continue;
      }
      i++;
    }
    this.problems.push("an unclosed double quote");
    return s.length;
  }

  #backtickEnd(from: number): number {
    const s = this.source;
    let i = from;
    while (i < s.length) {
      if (s[i] === "\\") {
        i += 2;
        continue;
      }
      if (s[i] === "`") return i;
      i++;
    }
    this.problems.push("an unclosed backtick");
    return s.length;
  }

  #nestedScript(script: string, speculative = false): void {
    if (this.depth >= MAX_DEPTH) {
      this.problems.push("commands nested too deeply to check");
      return;
    }
    const parsed = parseShell(script, this.depth + 1);
    if (speculative) {
      // Arithmetic that does not parse is not a problem worth asking about, only a possible command.
      this.nested.push(...parsed.commands.map((command) => ({ ...command, speculative: true })));
    } else {
      this.nested.push(...parsed.commands);
      this.problems.push(...parsed.problems);
    }
  }

  /** Reads one word, applying quote removal and noting expansions. */
  #readWord(): ShellWord {
    const s = this.source;
    let text = "";
    let dynamic = false;
    let glob = false;
    const start = this.#pos;
    while (this.#pos < s.length) {
      const c = s[this.#pos]!;
      if (c === " " || c === "\t" || c === "\n") break;
      if (OPERATORS.some((op) => s.startsWith(op, this.#pos))) {
        // `<(` inside a word is not a process substitution start; treat operators as word ends.
        break;
      }
      if (c === "\\") {
        const next = s[this.#pos + 1];
        if (next === undefined) {
          this.#pos++;
          break;
        }
        if (next !== "\n") text += next;
        this.#pos += 2;
        continue;
      }
      if (c === "'") {
        const end = s.indexOf("'", this.#pos + 1);
        if (end === -1) {
          this.problems.push("an unclosed single quote");
          text += s.slice(this.#pos + 1);
          this.#pos = s.length;
          break;
        }
        text += s.slice(this.#pos + 1, end);
        this.#pos = end + 1;
        continue;
      }
      if (c === "$" && s[this.#pos + 1] === "'") {
        const end = this.#ansiQuoteEnd(this.#pos + 2);
        text += decodeAnsiC(s.slice(this.#pos + 2, end));
        this.#pos = end + 1;
        continue;
      }
      if (c === '"') {
        const end = this.#skipDoubleQuoted(this.#pos + 1);
        const inner = s.slice(this.#pos + 1, end - 1);
        const part = this.#expandDoubleQuoted(inner);
        text += part.text;
        dynamic ||= part.dynamic;
        this.#pos = end;
        continue;
      }
      if (c === "$") {
        dynamic = true;
        const consumed = this.#readExpansion(this.#pos);
        text += s.slice(this.#pos, consumed);
        this.#pos = consumed;
        continue;
      }
      if (c === "`") {
        const end = this.#backtickEnd(this.#pos + 1);
        this.#nestedScript(s.slice(this.#pos + 1, end).replace(/\\([`\\$])/g, "$1"));
        text += s.slice(this.#pos, end + 1);
        dynamic = true;
        this.#pos = end + 1;
        continue;
      }
      if (c === "~" && this.#pos === start) dynamic = true;
      if (c === "*" || c === "?" || c === "[") glob = true;
      text += c;
      this.#pos++;
    }
    return { text, dynamic, glob };
  }

  #ansiQuoteEnd(from: number): number {
    const s = this.source;
    let i = from;
    while (i < s.length) {
      if (s[i] === "\\") {
        i += 2;
        continue;
      }
      if (s[i] === "'") return i;
      i++;
    }
    this.problems.push("an unclosed $'...' quote");
    return s.length;
  }

  /** Checks every `$(...)`, `$((...))` and backtick group of `text` (the inside of double quotes, `${...}`). */
  #nestedSubstitutions(text: string): void {
    if (!text.includes("$(") && !text.includes("`")) return;
    // A scanner over the text alone finds the groups with the same quoting and nesting rules.
    const inner = new Scanner(text, this.depth);
    for (let i = 0; i < text.length; i++) {
      if (text[i] === "\\") {
        i++;
        continue;
      }
      if (text[i] === "$" && text[i + 1] === "(") i = inner.readExpansionAt(i) - 1;
      else if (text[i] === "`") {
        const end = inner.backtickEndAt(i + 1);
        inner.nestedScriptOf(text.slice(i + 1, end).replace(/\\([`\\$])/g, "$1"));
        i = end;
      }
    }
    this.nested.push(...inner.nested);
    this.problems.push(...inner.problems);
  }

  /** {@link Scanner.#readExpansion} for another scanner's use. */
  readExpansionAt(from: number): number {
    return this.#readExpansion(from);
  }

  /** {@link Scanner.#backtickEnd} for another scanner's use. */
  backtickEndAt(from: number): number {
    return this.#backtickEnd(from);
  }

  /** {@link Scanner.#nestedScript} for another scanner's use. */
  nestedScriptOf(script: string): void {
    this.#nestedScript(script);
  }

  /** Reads `$name`, `${...}`, `$(...)`, `$((...))` starting at `from`; returns the index after it. */
  #readExpansion(from: number): number {
    const s = this.source;
    const next = s[from + 1];
    if (next === "(" && s[from + 2] === "(") {
      // `end` is the ")" that closes the first "(", so the text between the parentheses is inner.
      const end = this.#balanced(from + 2, "(", ")");
      const inner = s.slice(from + 3, Math.max(from + 3, end - 1));
      // Arithmetic may still hold command substitutions, and what is not valid arithmetic runs as a
      // command in a subshell in some shells: check it as a possible command too.
      this.#nestedSubstitutions(inner);
      this.#nestedScript(inner, true);
      return Math.min(s.length, end + 1);
    }
    if (next === "(") {
      const end = this.#balanced(from + 2, "(", ")");
      this.#nestedScript(s.slice(from + 2, end));
      return end + 1;
    }
    if (next === "{") {
      const end = this.#balanced(from + 2, "{", "}");
      this.#nestedSubstitutions(s.slice(from + 2, end));
      return end + 1;
    }
    let i = from + 1;
    if (next !== undefined && /[@*#?$!\-0-9]/.test(next)) return i + 1;
    while (i < s.length && /[A-Za-z0-9_]/.test(s[i]!)) i++;
    return i;
  }

  #expandDoubleQuoted(inner: string): { text: string; dynamic: boolean } {
    let text = "";
    let dynamic = false;
    for (let i = 0; i < inner.length; i++) {
      const c = inner[i]!;
      if (c === "\\" && i + 1 < inner.length && '$`"\\\n'.includes(inner[i + 1]!)) {
        if (inner[i + 1] !== "\n") text += inner[i + 1];
        i++;
        continue;
      }
      if (c === "$" && i + 1 < inner.length && /[A-Za-z_{(@*#?$!\-0-9]/.test(inner[i + 1]!)) dynamic = true;
      if (c === "`") dynamic = true;
      text += c;
    }
    // Substitutions inside the quotes run commands too.
    this.#nestedSubstitutions(inner);
    return { text, dynamic };
  }
}

function decodeAnsiC(body: string): string {
  return body.replace(/\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)/g, (_, sequence: string) => {
    if (sequence.startsWith("x")) return String.fromCharCode(Number.parseInt(sequence.slice(1), 16));
    if (/^[0-7]+$/.test(sequence)) return String.fromCharCode(Number.parseInt(sequence, 8));
    const map: Record<string, string> = {
      n: "\n",
      t: "\t",
      r: "\r",
      a: "\x07",
      b: "\b",
      e: "\x1b",
      E: "\x1b",
    };
    return map[sequence] ?? sequence;
  });
}

/** Groups tokens into simple commands (assignments, redirections and reserved words removed). */
function simpleCommands(tokens: readonly Token[], problems: string[]): ShellWord[][] {
  const commands: ShellWord[][] = [];
  let current: ShellWord[] = [];
  const cases: ("pattern" | "body")[] = [];
  let skipUntilSeparator = false; // for/select headers
  let expectCaseSubject = false;
  let expectCaseIn = false;
  let inDoubleBracket = false;
  const flush = () => {
    if (current.length > 0) commands.push(current);
    current = [];
  };
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token.type === "op") {
      if (REDIRECTIONS.has(token.op)) {
        // The target is a word of the redirection, not an argument.
        if (tokens[i + 1]?.type === "word") i++;
        continue;
      }
      if (cases.length > 0 && cases[cases.length - 1] === "pattern") {
        if (token.op === ")") cases[cases.length - 1] = "body";
        continue;
      }
      if (token.op === ";;" || token.op === ";&" || token.op === ";;&") {
        flush();
        if (cases.length > 0) cases[cases.length - 1] = "pattern";
        continue;
      }
      if (SEPARATORS.has(token.op)) {
        flush();
        skipUntilSeparator = false;
        continue;
      }
      continue;
    }
    const word = token.word;
    if (inDoubleBracket) {
      if (word.text === "]]" && !word.dynamic) inDoubleBracket = false;
      continue;
    }
    if (expectCaseSubject) {
      expectCaseSubject = false;
      expectCaseIn = true;
      continue;
    }
    if (expectCaseIn) {
      expectCaseIn = false;
      if (word.text !== "in") problems.push("a case statement without 'in'");
      cases.push("pattern");
      continue;
    }
    if (cases.length > 0 && cases[cases.length - 1] === "pattern") {
      if (word.text === "esac" && current.length === 0) cases.pop();
      else if (word.text.endsWith(")")) cases[cases.length - 1] = "body";
      continue;
    }
    if (skipUntilSeparator) {
      if (word.text === "do" && !word.dynamic) skipUntilSeparator = false;
      continue;
    }
    // NAME=value before the command is an assignment, whatever its value.
    if (current.length === 0 && /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/.test(word.text)) continue;
    if (current.length === 0 && !word.dynamic) {
      if (RESERVED.has(word.text)) continue;
      if (word.text === "esac" && cases.length > 0) {
        cases.pop();
        continue;
      }
      if (word.text === "case") {
        expectCaseSubject = true;
        continue;
      }
      if (word.text === "for" || word.text === "select") {
        skipUntilSeparator = true;
        continue;
      }
      if (word.text === "[[") {
        inDoubleBracket = true;
        continue;
      }
      if (word.text === "function") {
        i++; // the function's name
        continue;
      }
      // name() { ... } defines a function: its body is read as commands below.
      const next = tokens[i + 1];
      const after = tokens[i + 2];
      if (next?.type === "op" && next.op === "(" && after?.type === "op" && after.op === ")") {
        i += 2;
        continue;
      }
    }
    current.push(word);
  }
  flush();
  if (cases.length > 0 || expectCaseIn || expectCaseSubject) problems.push("an unterminated case statement");
  return commands;
}

function baseName(word: ShellWord): string {
  const text = word.text;
  const slash = text.lastIndexOf("/");
  return slash === -1 ? text : text.slice(slash + 1);
}

/** Options of wrappers that take a value, per wrapper. */
const WRAPPER_VALUE_OPTIONS: Record<string, readonly string[]> = {
  sudo: ["-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-c"],
  doas: ["-u", "-C"],
  env: ["-u", "-C", "-S", "--unset", "--chdir", "--split-string"],
  nice: ["-n", "--adjustment"],
  ionice: ["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"],
  stdbuf: ["-i", "-o", "-e", "--input", "--output", "--error"],
  timeout: ["-s", "-k", "--signal", "--kill-after"],
  exec: ["-a"],
  xargs: [
    "-a",
    "-d",
    "-E",
    "-e",
    "-I",
    "-i",
    "-L",
    "-l",
    "-n",
    "-P",
    "-s",
    "--arg-file",
    "--delimiter",
    "--max-args",
    "--max-procs",
    "--max-lines",
    "--replace",
    "--eof",
  ],
  setsid: [],
  nohup: [],
  time: ["-f", "-o"],
  command: [],
  builtin: [],
  chroot: ["--userspec", "--groups"],
  busybox: [],
  unbuffer: [],
  chrt: [],
  taskset: [],
  strace: ["-e", "-o", "-p", "-s", "-u", "-E"],
};
/** Wrappers that take one positional argument before the wrapped command. */
const WRAPPER_LEADING_ARGUMENTS: Record<string, number> = { timeout: 1, chroot: 1, chrt: 1, taskset: 1 };

/** Splits a command into itself plus the commands it runs. */
function expand(argv: readonly ShellWord[], depth: number, out: ShellCommand[], problems: string[]): void {
  if (argv.length === 0) return;
  const head = argv[0]!;
  if (head.dynamic || head.glob) {
    problems.push(`the command name "${head.text}" is only known at run time`);
    out.push({ argv, wrapper: false });
    return;
  }
  const name = baseName(head);
  if (depth > MAX_DEPTH) {
    problems.push("commands nested too deeply to check");
    out.push({ argv, wrapper: false });
    return;
  }
  if (name in WRAPPER_VALUE_OPTIONS) {
    const valueOptions = WRAPPER_VALUE_OPTIONS[name]!;
    let i = 1;
    if (name === "command" || name === "builtin") {
      if (argv.slice(1).some((w) => w.text === "-v" || w.text === "-V")) {
        out.push({ argv, wrapper: false });
        return;
      }
    }
    if (name === "env" || name === "sudo") {
      if (argv.some((w) => w.text === "-S" || w.text.startsWith("--split-string"))) {
        problems.push(`"${name} -S" splits a string into a command`);
      }
    }
    for (; i < argv.length; i++) {
      const word = argv[i]!;
      if (word.text === "--") {
        i++;
        break;
      }
      if (name === "env" && /^[A-Za-z_][A-Za-z0-9_]*=/.test(word.text)) continue;
      if (!word.text.startsWith("-") || word.text === "-") {
        if (name === "env" && word.text === "-") continue;
        break;
      }
      if (valueOptions.includes(word.text)) i++;
    }
    i += WRAPPER_LEADING_ARGUMENTS[name] ?? 0;
    out.push({ argv, wrapper: true });
    const rest = argv.slice(i);
    if (rest.length === 0) {
      if (name === "xargs") problems.push("xargs runs commands built from its input");
      return;
    }
    expand(rest, depth + 1, out, problems);
    return;
  }
  if (SHELLS.has(name) || (name === "busybox" && argv[1]?.text === "sh")) {
    const args = name === "busybox" ? argv.slice(2) : argv.slice(1);
    out.push({ argv, wrapper: true });
    let script: ShellWord | undefined;
    let sawC = false;
    let fileArgument: ShellWord | undefined;
    for (let i = 0; i < args.length; i++) {
      const word = args[i]!;
      if (sawC) {
        script = word;
        break;
      }
      if (word.text === "--") {
        fileArgument = args[i + 1];
        break;
      }
      if (/^-[A-Za-z]*c[A-Za-z]*$/.test(word.text)) {
        sawC = true;
        continue;
      }
      if (word.text === "-o" || word.text === "+o" || word.text === "-O" || word.text === "+O") {
        i++;
        continue;
      }
      if (/^[-+]/.test(word.text)) continue;
      fileArgument = word;
      break;
    }
    if (script) {
      if (script.dynamic) problems.push(`"${name} -c" runs a script that is only known at run time`);
      else {
        const parsed = parseShell(script.text, depth + 1);
        out.push(...parsed.commands);
        problems.push(...parsed.problems);
      }
    } else if (sawC) problems.push(`"${name} -c" without a script`);
    else if (fileArgument) problems.push(`"${name}" runs the script file "${fileArgument.text}"`);
    else problems.push(`"${name}" reads commands from its input`);
    return;
  }
  if (name === "eval") {
    out.push({ argv, wrapper: true });
    const rest = argv.slice(1);
    if (rest.some((w) => w.dynamic)) problems.push("eval runs a string that is only known at run time");
    else {
      const parsed = parseShell(rest.map((w) => w.text).join(" "), depth + 1);
      out.push(...parsed.commands);
      problems.push(...parsed.problems);
    }
    return;
  }
  if (name === "source" || name === ".") {
    problems.push(`"${name}" runs commands from a file`);
    out.push({ argv, wrapper: false });
    return;
  }
  if (name === "su") {
    out.push({ argv, wrapper: true });
    const index = argv.findIndex((w) => w.text === "-c" || w.text === "--command");
    const script = index === -1 ? undefined : argv[index + 1];
    if (!script) problems.push('"su" starts a shell that reads commands from its input');
    else if (script.dynamic) problems.push('"su -c" runs a script that is only known at run time');
    else {
      const parsed = parseShell(script.text, depth + 1);
      out.push(...parsed.commands);
      problems.push(...parsed.problems);
    }
    return;
  }
  out.push({ argv, wrapper: false });
  if (name === "find") {
    for (let i = 1; i < argv.length; i++) {
      if (!["-exec", "-execdir", "-ok", "-okdir"].includes(argv[i]!.text)) continue;
      let end = i + 1;
      while (end < argv.length && argv[end]!.text !== ";" && argv[end]!.text !== "+") end++;
      expand(argv.slice(i + 1, end), depth + 1, out, problems);
      i = end;
    }
  }
  if (name === "watch") problems.push('"watch" runs its arguments through a shell');
}

/**
 * Reads a shell command line statically. Every simple command it would run is listed (wrappers and the
 * commands they wrap separately); `problems` says what could not be read, such as a command name that
 * comes from a variable or a shell reading its script from a file.
 */
export function parseShell(script: string, depth = 0): ParsedShell {
  const scanner = new Scanner(script, depth);
  scanner.scan();
  const problems = [...scanner.problems];
  const commands: ShellCommand[] = [];
  for (const argv of simpleCommands(scanner.tokens, problems)) expand(argv, depth, commands, problems);
  commands.push(...scanner.nested);
  return { commands, problems: [...new Set(problems)] };
}

/** Splits a rule pattern such as `git push --force` into literal words (quotes honoured). */
export function splitPatternWords(pattern: string): string[] {
  const scanner = new Scanner(pattern, MAX_DEPTH);
  scanner.scan();
  return scanner.tokens.flatMap((token) => (token.type === "word" ? [token.word.text] : [token.op]));
}
