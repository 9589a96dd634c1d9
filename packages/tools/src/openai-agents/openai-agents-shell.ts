import type { Shell, ShellAction, ShellResult } from "@openai/agents";
import { type SandboxOrTools, toolSetOf } from "../adapter-input.js";
import type { SandboxToolsOptions } from "../create-sandbox-tools.js";
import { boundText } from "../output/bounded-output.js";
import type { SandboxTool, SandboxToolSet } from "../tool-types.js";

interface CommandData {
  exitCode?: number | undefined;
  stdout?: string | undefined;
  stderr?: string | undefined;
}

/**
 * The OpenAI Agents SDK's `Shell` (for `shellTool({ shell })`) over a sandbox. Each command goes through the
 * `run_command` tool, so the policy, approval, audit, timeout and output limits apply; a refused command
 * is reported to the model on stderr with exit code `null`.
 */
export class SandboxShell implements Shell {
  readonly #runCommand: SandboxTool<"run_command">;

  constructor(source: SandboxOrTools, options?: SandboxToolsOptions) {
    const set = toolSetOf(source, options) as SandboxToolSet & { run_command?: SandboxTool<"run_command"> };
    if (!set.run_command) throw new TypeError("the tool set has no run_command tool (the policy denies it)");
    this.#runCommand = set.run_command;
  }

  /** Runs the action's commands in order, as the shell tool asks. */
  async run(action: ShellAction): Promise<ShellResult> {
    const output: ShellResult["output"] = [];
    const cap = action.maxOutputLength;
    const limit = (text: string) =>
      cap === undefined ? text : boundText(text, { maxBytes: cap, maxLines: Number.MAX_SAFE_INTEGER }).text;
    for (const command of action.commands) {
      const result = await this.#runCommand.execute({
        command,
        ...(action.timeoutMs === undefined ? {} : { timeoutMs: action.timeoutMs }),
      });
      const data = (result.data ?? {}) as CommandData;
      if (result.error?.code === "Timeout") {
        output.push({
          stdout: limit(data.stdout ?? ""),
          stderr: limit(data.stderr ?? ""),
          outcome: { type: "timeout" },
        });
        continue;
      }
      if (!result.ok || data.exitCode === undefined) {
        output.push({ stdout: "", stderr: limit(result.text), outcome: { type: "exit", exitCode: null } });
        continue;
      }
      output.push({
        stdout: limit(data.stdout ?? ""),
        stderr: limit(data.stderr ?? ""),
        outcome: { type: "exit", exitCode: data.exitCode },
      });
    }
    return cap === undefined ? { output } : { output, maxOutputLength: cap };
  }
}
