import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { viaRecord } from "../records/record-operations.js";
import { NAME_OPTION, sandboxTargets } from "../records/sandbox-names.js";
import type { CommandDefinition } from "./command-definition.js";
import { forEachSandbox } from "./for-each-sandbox.js";

/** A change of state `sbox stop|pause|resume` applies to each sandbox named. */
export type StateChange = "stop" | "pause" | "resume";

/**
 * The command that applies `change` to each sandbox named by id or `--name`: through the manager when the
 * sandbox has a record (so the record follows), else on the provider directly. A failure on one id does not
 * stop the others.
 */
export function stateChangeCommand(
  change: StateChange,
  summary: string,
  progress: string,
): CommandDefinition {
  return {
    name: change,
    summary,
    usage: [`sbox ${change} [--json] ID [ID...]`, `sbox ${change} [--json] --name NAME`],
    details:
      "Prints each id done; a failure on one id does not stop the others (the exit code is the first failure's).",
    options: { name: NAME_OPTION },
    async run(context, args) {
      const ids = expectPositionals(
        { ...args, positionals: await sandboxTargets(context, args) },
        change,
        ["ID", "ID..."],
        { min: 1, max: Number.POSITIVE_INFINITY },
      );
      expectNoCommand(args, change);
      const { code } = await forEachSandbox(context, ids, progress, async (id) => {
        if (!(await viaRecord(context, id, change))) await (await context.connect(id))[change]();
      });
      return code;
    },
  };
}
