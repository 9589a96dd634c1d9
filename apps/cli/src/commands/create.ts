import { stringOption } from "../args/parse-command-line.js";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { recordToJson } from "../records/record-json.js";
import { managerFor } from "../records/record-operations.js";
import { withNameLabel } from "../records/sandbox-names.js";
import type { CommandDefinition } from "./command-definition.js";
import { infoToJson } from "./sandbox-json.js";
import { buildSpec, SPEC_OPTIONS } from "./spec-options.js";

/** `sbox create`: creates a sandbox and prints its id. */
export const createCommand: CommandDefinition = {
  name: "create",
  summary: "create a sandbox and print its id",
  usage: ["sbox create [options]"],
  details:
    "Prints the new sandbox's id on stdout (with --json: its info). Remove it with `sbox rm ID`.\n" +
    "Where @sbox/manager is installed (and SBOX_RECORDS is not 0) the sandbox is also recorded in\n" +
    "$SBOX_HOME/manager.db with its owner and labels; its --ttl is then enforced by `sbox reap`.\n" +
    "With --name, every command that takes an ID also takes --name NAME (names are unique per provider).",
  options: {
    ...SPEC_OPTIONS,
    owner: { type: "string", valueName: "OWNER", description: "owner kept in the sandbox's record" },
  },
  examples: [
    "id=$(sbox create -l owner=me --ttl 2h)",
    "sbox create -p docker -t busybox:latest --json",
    "sbox create --name web && sbox exec --name web ls",
  ],
  async run(context, args) {
    expectPositionals(args, "create", [], { max: 0 });
    expectNoCommand(args, "create");
    const owner = stringOption(args.values, "owner");
    const provider = await context.provider();
    const spec = await withNameLabel(
      context,
      buildSpec(args.values, context.io.env),
      provider.honours.includes("name"),
    );
    // The manager marks sandboxes with metadata, so only providers that keep metadata can be recorded.
    const manager = provider.honours.includes("metadata")
      ? await managerFor(context, [context.providerName])
      : undefined;
    if (manager) {
      const record = await context.waitFor("creating sandbox", () =>
        manager.create({
          spec,
          provider: context.providerName,
          ...(owner === undefined ? {} : { ownerId: owner }),
          ...(spec.metadata === undefined ? {} : { labels: spec.metadata }),
        }),
      );
      const id = record.sandboxId!;
      if (context.json) {
        const sandbox = await context.connect(id);
        context.printJson({ ...infoToJson(await sandbox.getInfo()), record: recordToJson(record) });
      } else {
        context.print(`${id}\n`);
      }
      return 0;
    }
    if (owner !== undefined) {
      context.note(
        context.err.yellow("warning: --owner is only kept where sandboxes are recorded (@sbox/manager)"),
      );
    }
    const client = await context.client();
    const sandbox = await context.waitFor("creating sandbox", () => client.create(spec));
    if (context.json) context.printJson(infoToJson(await sandbox.getInfo()));
    else context.print(`${sandbox.id}\n`);
    return 0;
  },
};
