import type { OptionSpecs } from "../args/option-spec.js";
import type { ParsedCommandLine } from "../args/parse-command-line.js";
import type { CliContext } from "../cli-context.js";

/** One `sbox` command. Each lives in its own file under `commands/`. */
export interface CommandDefinition {
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** Synopsis lines, e.g. `sbox exec ID [options] -- CMD [ARG...]`. */
  readonly usage: readonly string[];
  /** Longer help text, shown by `sbox <command> --help`. */
  readonly details?: string | undefined;
  /** Command-specific options (global options are added by the dispatcher). */
  readonly options: OptionSpecs;
  /**
   * For commands that run a command (`run`, `exec ID`): after this many positionals the first word that is
   * not an option starts the command to run, with or without `--` before it.
   */
  readonly commandAfterPositionals?: number | undefined;
  /** The option that may stand in for the sandbox id positional (`--name`). */
  readonly idOption?: string | undefined;
  /** Examples shown in help. */
  readonly examples?: readonly string[] | undefined;
  /** Runs the command and returns the exit code. Throws SandboxErrors for failures. */
  run(context: CliContext, args: ParsedCommandLine): Promise<number>;
}
