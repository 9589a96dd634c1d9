import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import type { CommandDefinition } from "./command-definition.js";
import { forEachSandbox } from "./for-each-sandbox.js";

/** `sbox pause ID...`: pause sandboxes (freeze processes; resume continues them). */
export const pauseCommand: CommandDefinition = {
  name: "pause",
  summary: "pause sandboxes (freeze processes; resume continues them)",
  usage: ["sbox pause [--json] ID [ID...]"],
  details:
    "Prints each id done; a failure on one id does not stop the others (the exit code is the first failure's).",
  options: {},
  async run(context, args) {
    const ids = expectPositionals(args, "pause", ["ID", "ID..."], { min: 1, max: Number.POSITIVE_INFINITY });
    expectNoCommand(args, "pause");
    const { code } = await forEachSandbox(context, ids, "pausing", async (id) =>
      (await context.connect(id)).pause(),
    );
    return code;
  },
};
