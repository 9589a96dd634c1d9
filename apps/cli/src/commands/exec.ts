import type { Sandbox } from "@sbox/core";
import { NotSupportedError, SandboxError } from "@sbox/core";
import { booleanOption } from "../args/parse-command-line.js";
import { expectCommand, expectPositionals } from "../args/positionals.js";
import { usageError } from "../args/usage-error.js";
import type { CliContext } from "../cli-context.js";
import { NAME_OPTION, sandboxTarget } from "../records/sandbox-names.js";
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
  usage: ["sbox exec [options] ID [--] CMD [ARG...]", "sbox exec [options] --name NAME [--] CMD [ARG...]"],
  details:
    "Everything after the sandbox id is the command, as argv (no shell): use `sh -c '...'` for pipes and\n" +
    "variables; options of sbox go before the id. stdin is streamed to the command when it is not a terminal\n" +
    "(disable with --no-stdin). Ctrl-C kills the command's process tree.\n" +
    "With --detach the command runs in the background and its process id is printed: the id that\n" +
    "`sbox logs`, `sbox kill` and `sbox ps` take (and commands.connect in the SDK), whatever number the\n" +
    "process has inside the sandbox's own process namespace.",
  commandAfterPositionals: 1,
  idOption: "name",
  options: {
    ...COMMAND_OPTIONS,
    env: SPEC_OPTIONS.env!,
    name: NAME_OPTION,
    detach: {
      type: "boolean",
      short: "d",
      description: "start in the background and print its process id (for sbox logs/kill/ps)",
    },
  },
  examples: [
    "sbox exec local:3f2a ls -la /workspace",
    "tar c src | sbox exec local:3f2a -- tar x -C /workspace",
    "sbox exec -e DEBUG=1 -w /workspace local:3f2a sh -c 'make test'",
    "pid=$(sbox exec -d local:3f2a python3 -m http.server 8080) && sbox logs -f local:3f2a $pid",
    "sbox exec --name web ls",
  ],
  async run(context, args) {
    const { id, rest } = await sandboxTarget(context, args);
    expectPositionals({ ...args, positionals: id === undefined ? [] : [id, ...rest] }, "exec", ["ID"]);
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
  else {
    context.print(`${process.pid}\n`);
    if (context.io.stderr.isTTY === true) {
      context.note(
        context.err.dim(
          `process ${process.pid} of ${sandbox.id}: sbox logs ${sandbox.id} ${process.pid}, sbox kill ${sandbox.id} ${process.pid}`,
        ),
      );
    }
  }
  return 0;
}
