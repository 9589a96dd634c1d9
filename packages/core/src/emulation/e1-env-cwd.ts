import { SandboxError } from "../errors/sandbox-error.js";
import type { DriverCommand } from "../spec/provider-spec.js";
import { argvScript } from "./argv-script.js";
import { shellExports, shellQuote } from "./shell-quote.js";

/**
 * Exit code of a command whose working directory could not be entered. 126 is the shell's "found but
 * cannot run" code: the command did not run at all.
 */
export const CWD_FAILED_EXIT_CODE = 126;

/** Per-command working directory and environment, as a user passes them. */
export interface EnvCwdOptions {
  cwd?: string | undefined;
  env?: Readonly<Record<string, string>> | undefined;
}

/**
 * E1: the shell script that runs `command` in `cwd` with `env` set, for providers whose exec primitive
 * takes neither. When the directory cannot be entered the script prints a message to stderr and exits
 * {@link CWD_FAILED_EXIT_CODE} before the command runs, never running it somewhere else. Env keys must be
 * identifiers (`Validation` otherwise); every value is single-quoted, so quotes, newlines, `$()`,
 * backticks and unicode arrive byte for byte. An argv command is quoted word by word (and a missing
 * program reported as a shell would, see `argvScript`); a shell snippet is kept as written.
 */
export function applyEnvCwd(command: DriverCommand, options: EnvCwdOptions): string {
  const lines: string[] = [];
  if (options.cwd !== undefined) {
    if (typeof options.cwd !== "string" || options.cwd === "") {
      throw new SandboxError("Validation", "cwd must be a non-empty string", { retryable: false });
    }
    const dir = shellQuote(options.cwd);
    lines.push(
      `cd -- ${dir} || { printf 'sbox: cannot change the working directory to %s; the command was not run\\n' ${dir} >&2; exit ${CWD_FAILED_EXIT_CODE}; }`,
    );
  }
  const exports = shellExports(options.env);
  if (exports !== "") lines.push(exports.slice(0, -1));
  lines.push(commandScript(command));
  return lines.join("\n");
}

/** The script that runs `command` as its last step: a shell snippet as written, argv through `argvScript`. */
export function commandScript(command: DriverCommand): string {
  return "shell" in command ? command.shell : argvScript(command.argv);
}
