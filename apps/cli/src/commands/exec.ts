import type { Sandbox } from "@sbox/core";
import { NotSupportedError, SandboxError } from "@sbox/core";
import { booleanOption } from "../args/parse-command-line.js";
import { expectCommand, expectPositionals } from "../args/positionals.js";
import { usageError } from "../args/usage-error.js";
import type { CliContext } from "../cli-context.js";
import { exitCodeForSignal, trapInterrupts } from "../signals.js";
import type { CommandDefinition } from "./command-definition.js";
import { SPEC_OPTIONS } from "./spec-options.js";
import {
  COMMAND_OPTIONS,
  type CommandRunSettings,
  commandSettings,
  streamCommand,
} from "./stream-command.js";

/** `sbox exec ID -- CMD...`: runs a command in an existing sandbox with live output. */
export const execCommand: CommandDefinition = {
  name: "exec",
  summary: "run a command in a sandbox with live output; exit code passed through",
  usage: ["sbox exec [options] ID -- CMD [ARG...]"],
  details:
    "The command is argv (no shell): use `-- sh -c '...'` for pipes and variables. stdin is streamed to the\n" +
    "command when it is not a terminal (disable with --no-stdin). Ctrl-C kills the command's process tree.",
  options: {
    ...COMMAND_OPTIONS,
    env: SPEC_OPTIONS.env!,
    detach: {
      type: "boolean",
      short: "d",
      description: "start in the background and print its PID (for `sbox logs ID PID`)",
    },
  },
  examples: [
    "sbox exec local:3f2a -- ls -la /workspace",
    "tar c src | sbox exec local:3f2a -- tar x -C /workspace",
    "sbox exec -e DEBUG=1 -w /workspace local:3f2a -- sh -c 'make test'",
    "pid=$(sbox exec -d local:3f2a -- python3 -m http.server 8080) && sbox logs -f local:3f2a $pid",
  ],
  async run(context, args) {
    const [id] = expectPositionals(args, "exec", ["ID"]);
    const argv = expectCommand(args, "exec");
    const settings = commandSettings(context, args.values, true);
    const sandbox = await context.connect(id!);
    if (booleanOption(args.values, "detach")) return detach(context, sandbox, argv, settings);
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

/** `exec -d`: starts a background process (`background` capability) and prints its PID. */
async function detach(
  context: CliContext,
  sandbox: Sandbox,
  argv: readonly string[],
  settings: CommandRunSettings,
): Promise<number> {
  if (sandbox.capabilities.map.background === "unsupported") {
    throw new NotSupportedError("background", sandbox.provider, "exec --detach needs background processes");
  }
  if (settings.timeoutMs !== undefined) throw usageError("--timeout cannot be combined with --detach");
  const process = await context.waitFor("starting", () =>
    sandbox.commands.spawn(argv, {
      ...(settings.cwd === undefined ? {} : { cwd: settings.cwd }),
      ...(settings.user === undefined ? {} : { user: settings.user }),
      ...(settings.env === undefined ? {} : { env: settings.env }),
    }),
  );
  if (context.json) context.printJson({ id: sandbox.id, pid: process.pid });
  else context.print(`${process.pid}\n`);
  return 0;
}
