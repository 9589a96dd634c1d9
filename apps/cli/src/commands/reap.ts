import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import type { CommandDefinition } from "./command-definition.js";
import { printSandboxes } from "./ls.js";

/** `sbox reap`: stops (or destroys) sandboxes whose time to live has passed. */
export const reapCommand: CommandDefinition = {
  name: "reap",
  summary: "stop or destroy sandboxes whose time to live has passed",
  usage: ["sbox reap [--json]"],
  details:
    "Runs client.reap() for the provider: sandboxes past their ttl are stopped (destroyed where stop is\n" +
    "unsupported). Prints what was reaped. Safe to run from cron.",
  options: {},
  examples: ["sbox reap", "sbox reap -p docker --json"],
  async run(context, args) {
    expectPositionals(args, "reap", [], { max: 0 });
    expectNoCommand(args, "reap");
    const client = await context.client();
    const reaped = await context.waitFor("reaping expired sandboxes", () => client.reap());
    if (!context.json && reaped.length === 0) {
      context.note(context.err.dim("nothing expired"));
      return 0;
    }
    printSandboxes(context, reaped);
    return 0;
  },
};
