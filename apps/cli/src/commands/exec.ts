import { SandboxError } from "@sbox/core";
import { expectCommand, expectPositionals } from "../args/positionals.js";
import { exitCodeForSignal, trapInterrupts } from "../signals.js";
import type { CommandDefinition } from "./command-definition.js";
import { SPEC_OPTIONS } from "./spec-options.js";
import { COMMAND_OPTIONS, commandSettings, streamCommand } from "./stream-command.js";

/** `sbox exec ID -- CMD...`: runs a command in an existing sandbox with live output. */
export const execCommand: CommandDefinition = {
  name: "exec",
  summary: "run a command in a sandbox with live output; exit code passed through",
  usage: ["sbox exec [options] ID -- CMD [ARG...]"],
  details:
    "The command is argv (no shell): use `-- sh -c '...'` for pipes and variables. stdin is streamed to the\n" +
    "command when it is not a terminal (disable with --no-stdin). Ctrl-C kills the command's process tree.",
  options: { ...COMMAND_OPTIONS, env: SPEC_OPTIONS.env! },
  examples: [
    "sbox exec local:3f2a -- ls -la /workspace",
    "tar c src | sbox exec local:3f2a -- tar x -C /workspace",
    "sbox exec -e DEBUG=1 -w /workspace local:3f2a -- sh -c 'make test'",
  ],
  async run(context, args) {
    const [id] = expectPositionals(args, "exec", ["ID"]);
    const argv = expectCommand(args, "exec");
    const settings = commandSettings(context, args.values, true);
    const sandbox = await context.connect(id!);
    const controller = new AbortController();
    let interruptedBy: string | undefined;
    const untrap = trapInterrupts((signal) => {
      interruptedBy = signal;
      controller.abort(new SandboxError("Aborted", `interrupted by ${signal}`, { retryable: false }));
    });
    try {
      return await streamCommand(context, sandbox, argv, settings, controller.signal);
    } catch (error) {
      if (interruptedBy !== undefined) return exitCodeForSignal(interruptedBy);
      throw error;
    } finally {
      untrap();
    }
  },
};
