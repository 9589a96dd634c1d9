import type { Sandbox } from "@sbox/core";
import { SandboxError } from "@sbox/core";
import { booleanOption } from "../args/parse-command-line.js";
import { expectCommand, expectPositionals } from "../args/positionals.js";
import { formatErrorLine } from "../output/error-line.js";
import { withNameLabel } from "../records/sandbox-names.js";
import { exitCodeForSignal, trapInterrupts } from "../signals.js";
import type { CommandDefinition } from "./command-definition.js";
import { buildSpec, SPEC_OPTIONS } from "./spec-options.js";
import { COMMAND_OPTIONS, commandSettings, streamCommand } from "./stream-command.js";

/** `sbox run -- CMD...`: create a sandbox, run one command with live output, destroy the sandbox. */
export const runCommand: CommandDefinition = {
  name: "run",
  summary: "create a sandbox, run a command in it with live output, destroy it",
  usage: ["sbox run [options] [--] CMD [ARG...]"],
  details:
    "The exit code is the command's own. Ctrl-C (or SIGTERM) kills the command and destroys the sandbox before\n" +
    "sbox exits (130, or 143 for SIGTERM); a second Ctrl-C exits at once and may leave the sandbox behind.\n" +
    "stdin is passed to the command when it is not a terminal.",
  commandAfterPositionals: 0,
  options: {
    ...SPEC_OPTIONS,
    ...COMMAND_OPTIONS,
    keep: { type: "boolean", description: "keep the sandbox afterwards (its id is printed on stderr)" },
  },
  examples: [
    "sbox run sh -c 'echo hello from $(hostname)'",
    "echo 'print(6*7)' | sbox run -p docker -t python:3.12 -- python3 -",
    "sbox run --timeout 10s -- ./slow-test.sh",
  ],
  async run(context, args) {
    const argv = expectCommand(args, "run");
    expectPositionals(args, "run", [], { max: 0 });
    const spec = buildSpec(args.values, context.io.env);
    const settings = commandSettings(context, args.values, false);
    const keep = booleanOption(args.values, "keep");
    const controller = new AbortController();
    let interruptedBy: string | undefined;
    let sandbox: Sandbox | undefined;
    const untrap = trapInterrupts(
      (signal) => {
        interruptedBy = signal;
        controller.abort(new SandboxError("Aborted", `interrupted by ${signal}`, { retryable: false }));
        if (sandbox && !keep) context.note(context.err.dim(`${signal}: destroying sandbox ${sandbox.id}...`));
      },
      () => {
        if (sandbox && !keep) context.note(`sandbox ${sandbox.id} may be left behind: sbox rm ${sandbox.id}`);
      },
    );
    let failure: unknown;
    let code = 0;
    try {
      const client = await context.client();
      const named = await withNameLabel(context, spec, (await context.provider()).honours.includes("name"));
      // Create is not aborted mid-way: a half-created sandbox could escape cleanup. An interrupt during
      // create is honoured as soon as it returns, by destroying what it made.
      sandbox = await context.waitFor("creating sandbox", () => client.create(named));
      if (keep) context.note(context.err.dim(`sandbox ${sandbox.id}`));
      if (interruptedBy === undefined)
        code = await streamCommand(context, sandbox, argv, settings, controller.signal);
    } catch (error) {
      if (interruptedBy === undefined) failure = error;
    }
    if (sandbox && !keep) {
      const created = sandbox;
      try {
        await context.waitFor(`destroying ${created.id}`, () => created.destroy());
      } catch (error) {
        // A leak must not go unnoticed: a failed destroy fails the run, naming the sandbox.
        const destroyError = new SandboxError(
          SandboxError.isInstance(error) ? error.code : "Provider",
          `could not destroy sandbox ${created.id}: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
        if (failure === undefined) failure = destroyError;
        else
          context.io.stderr.write(
            formatErrorLine(destroyError, { colours: context.err, debug: context.debug }),
          );
      }
    }
    untrap();
    if (interruptedBy !== undefined) {
      if (failure !== undefined) {
        context.io.stderr.write(formatErrorLine(failure, { colours: context.err, debug: context.debug }));
      }
      return exitCodeForSignal(interruptedBy);
    }
    if (failure !== undefined) throw failure;
    return code;
  },
};
