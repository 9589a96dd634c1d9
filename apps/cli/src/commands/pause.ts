import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { viaRecord } from "../records/record-operations.js";
import { NAME_OPTION, sandboxTargets } from "../records/sandbox-names.js";
import type { CommandDefinition } from "./command-definition.js";
import { forEachSandbox } from "./for-each-sandbox.js";

/** `sbox pause ID...`: pause sandboxes (freeze processes; resume continues them). */
export const pauseCommand: CommandDefinition = {
  name: "pause",
  summary: "pause sandboxes (freeze processes; resume continues them)",
  usage: ["sbox pause [--json] ID [ID...]", "sbox pause [--json] --name NAME"],
  details:
    "Prints each id done; a failure on one id does not stop the others (the exit code is the first failure's).",
  options: { name: NAME_OPTION },
  async run(context, args) {
    const ids = expectPositionals(
      { ...args, positionals: await sandboxTargets(context, args) },
      "pause",
      ["ID", "ID..."],
      { min: 1, max: Number.POSITIVE_INFINITY },
    );
    expectNoCommand(args, "pause");
    const { code } = await forEachSandbox(context, ids, "pausing", async (id) => {
      if (!(await viaRecord(context, id, "pause"))) await (await context.connect(id)).pause();
    });
    return code;
  },
};
