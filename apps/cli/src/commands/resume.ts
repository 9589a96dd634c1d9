import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { viaRecord } from "../records/record-operations.js";
import { NAME_OPTION, sandboxTargets } from "../records/sandbox-names.js";
import type { CommandDefinition } from "./command-definition.js";
import { forEachSandbox } from "./for-each-sandbox.js";

/** `sbox resume ID...`: resume stopped or paused sandboxes. */
export const resumeCommand: CommandDefinition = {
  name: "resume",
  summary: "resume stopped or paused sandboxes",
  usage: ["sbox resume [--json] ID [ID...]", "sbox resume [--json] --name NAME"],
  details:
    "Prints each id done; a failure on one id does not stop the others (the exit code is the first failure's).",
  options: { name: NAME_OPTION },
  async run(context, args) {
    const ids = expectPositionals(
      { ...args, positionals: await sandboxTargets(context, args) },
      "resume",
      ["ID", "ID..."],
      { min: 1, max: Number.POSITIVE_INFINITY },
    );
    expectNoCommand(args, "resume");
    const { code } = await forEachSandbox(context, ids, "resuming", async (id) => {
      if (!(await viaRecord(context, id, "resume"))) await (await context.connect(id)).resume();
    });
    return code;
  },
};
