import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { viaRecord } from "../records/record-operations.js";
import { NAME_OPTION, sandboxTargets } from "../records/sandbox-names.js";
import type { CommandDefinition } from "./command-definition.js";
import { forEachSandbox } from "./for-each-sandbox.js";

/** `sbox stop ID...`: stop sandboxes (compute off, files kept where the provider keeps them). */
export const stopCommand: CommandDefinition = {
  name: "stop",
  summary: "stop sandboxes (compute off, files kept where the provider keeps them)",
  usage: ["sbox stop [--json] ID [ID...]", "sbox stop [--json] --name NAME"],
  details:
    "Prints each id done; a failure on one id does not stop the others (the exit code is the first failure's).",
  options: { name: NAME_OPTION },
  async run(context, args) {
    const ids = expectPositionals(
      { ...args, positionals: await sandboxTargets(context, args) },
      "stop",
      ["ID", "ID..."],
      { min: 1, max: Number.POSITIVE_INFINITY },
    );
    expectNoCommand(args, "stop");
    const { code } = await forEachSandbox(context, ids, "stopping", async (id) => {
      if (!(await viaRecord(context, id, "stop"))) await (await context.connect(id)).stop();
    });
    return code;
  },
};
