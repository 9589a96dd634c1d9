import { shellQuoteArgv } from "./shell-quote.js";

/**
 * Shell text that runs its positional parameters (`"$@"`) as argv, for wrappers of the form
 * `sh -c EXEC_ARGS_SCRIPT sh PROGRAM ARG...`. A plain `exec "$@"` reports a missing program in the
 * wrapper's own words (`sh: 1: exec: nosuchcommand: not found`), which names a shell the user never
 * wrote; this says what an interactive shell says — `nosuchcommand: command not found`, exit 127 — and
 * for a path that cannot run, `No such file or directory` (127), `Is a directory` or `Permission denied`
 * (126). Then it replaces itself with the program, so the program's own exit status and signals are the
 * command's.
 */
export const EXEC_ARGS_SCRIPT: string = [
  'case $1 in */*) if [ ! -e "$1" ]; then printf \'%s: No such file or directory\\n\' "$1" >&2; exit 127',
  'elif [ -d "$1" ]; then printf \'%s: Is a directory\\n\' "$1" >&2; exit 126',
  'elif [ ! -x "$1" ]; then printf \'%s: Permission denied\\n\' "$1" >&2; exit 126; fi;;',
  '*) command -v "$1" >/dev/null 2>&1 || { printf \'%s: command not found\\n\' "$1" >&2; exit 127; };; esac',
  'exec "$@"',
].join("\n");

/**
 * Shell text that runs `argv` (no shell interpretation of its words) as the last thing a script does,
 * with the messages of {@link EXEC_ARGS_SCRIPT} for a program that is missing or cannot run.
 */
export function argvScript(argv: readonly string[]): string {
  return `set -- ${shellQuoteArgv(argv)}\n${EXEC_ARGS_SCRIPT}`;
}

/**
 * The quoted argv an {@link argvScript} runs, for showing a command to a person (process lists); any
 * other text is returned unchanged.
 */
export function displayOfScript(script: string): string {
  const suffix = `\n${EXEC_ARGS_SCRIPT}`;
  return script.startsWith("set -- ") && script.endsWith(suffix)
    ? script.slice("set -- ".length, -suffix.length)
    : script;
}
