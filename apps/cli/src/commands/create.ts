import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import type { CommandDefinition } from "./command-definition.js";
import { infoToJson } from "./sandbox-json.js";
import { buildSpec, SPEC_OPTIONS } from "./spec-options.js";

/** `sbox create`: creates a sandbox and prints its id. */
export const createCommand: CommandDefinition = {
  name: "create",
  summary: "create a sandbox and print its id",
  usage: ["sbox create [options]"],
  details: "Prints the new sandbox's id on stdout (with --json: its info). Remove it with `sbox rm ID`.",
  options: SPEC_OPTIONS,
  examples: ["id=$(sbox create -l owner=me --ttl 2h)", "sbox create -p docker -t busybox:latest --json"],
  async run(context, args) {
    expectPositionals(args, "create", [], { max: 0 });
    expectNoCommand(args, "create");
    const spec = buildSpec(args.values, context.io.env);
    const client = await context.client();
    const sandbox = await context.waitFor("creating sandbox", () => client.create(spec));
    if (context.json) {
      const info = await sandbox.getInfo();
      context.printJson(infoToJson(info));
    } else {
      context.print(`${sandbox.id}\n`);
    }
    return 0;
  },
};
