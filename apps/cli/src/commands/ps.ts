import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { renderTable } from "../output/table.js";
import { NAME_OPTION, sandboxTarget } from "../records/sandbox-names.js";
import type { CommandDefinition } from "./command-definition.js";

/** `sbox ps ID`: the background processes of a sandbox. */
export const psCommand: CommandDefinition = {
  name: "ps",
  summary: "list a sandbox's background processes (ids for sbox logs and sbox kill)",
  usage: ["sbox ps [--json] ID", "sbox ps [--json] --name NAME"],
  details:
    "Lists the processes started with `sbox exec -d` (or commands.spawn): their id, as `sbox logs`,\n" +
    "`sbox kill` and commands.connect take it, whether they still run, and their exit code once ended.\n" +
    "Needs the background capability. `sbox ls` lists sandboxes.",
  options: { name: NAME_OPTION },
  examples: ["sbox ps local:3f2a", "sbox ps --json --name web | jq '.[] | select(.running) | .pid'"],
  async run(context, args) {
    const target = await sandboxTarget(context, args);
    const [id] = expectPositionals(
      { ...args, positionals: target.id === undefined ? [] : [target.id, ...target.rest] },
      "ps",
      ["ID"],
    );
    expectNoCommand(args, "ps");
    const sandbox = await context.connect(id!);
    const processes = await context.waitFor("listing processes", () => sandbox.commands.list());
    if (context.json) {
      context.printJson(
        processes.map((process) => ({
          pid: process.pid,
          command: process.command,
          running: process.running,
          exitCode: process.exitCode ?? null,
        })),
      );
      return 0;
    }
    if (processes.length === 0) {
      if (context.io.stdout.isTTY) context.note(context.err.dim("no background processes"));
      return 0;
    }
    const { out } = context;
    context.print(
      renderTable(
        processes,
        [
          { header: "PID", cell: (process) => String(process.pid) },
          {
            header: "STATE",
            cell: (process) =>
              process.running
                ? out.green("running")
                : out.dim(process.exitCode === undefined ? "exited" : `exited ${process.exitCode}`),
          },
          { header: "COMMAND", cell: (process) => process.command.replaceAll("\n", " ") },
        ],
        out.bold,
      ),
    );
    return 0;
  },
};
