import { SandboxError } from "@sbox/core";
import { booleanOption, stringListOption } from "../args/parse-command-line.js";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { usageError } from "../args/usage-error.js";
import { EXIT_CODES } from "../output/exit-codes.js";
import { confirm } from "../prompt.js";
import { viaRecord } from "../records/record-operations.js";
import { NAME_OPTION, sandboxTargets } from "../records/sandbox-names.js";
import type { CommandDefinition } from "./command-definition.js";
import { forEachSandbox } from "./for-each-sandbox.js";
import { listFilterOf, listSandboxes } from "./ls.js";

/** `sbox rm`: destroys sandboxes. */
export const rmCommand: CommandDefinition = {
  name: "rm",
  summary: "destroy sandboxes (ids, or --all [--label K=V]); asks before removing more than one",
  usage: ["sbox rm [-f] ID [ID...]", "sbox rm [-f] --name NAME", "sbox rm --all [--label K=V]... [--yes]"],
  details:
    "Removing more than one sandbox asks for confirmation unless --yes is given; without a terminal to ask\n" +
    "on (stdin not a TTY) it refuses with exit code 2. --force ignores ids that do not exist.",
  options: {
    all: { type: "boolean", short: "a", description: "every sandbox of the provider (narrowed by --label)" },
    label: {
      type: "string",
      short: "l",
      multiple: true,
      valueName: "K=V",
      description: "with --all: only with this label",
    },
    yes: { type: "boolean", short: "y", description: "do not ask for confirmation" },
    force: { type: "boolean", short: "f", description: "ignore ids that do not exist" },
    name: NAME_OPTION,
  },
  examples: ["sbox rm local:3f2a", "sbox rm --all -l owner=ci --yes"],
  async run(context, args) {
    expectNoCommand(args, "rm");
    const all = booleanOption(args.values, "all");
    const force = booleanOption(args.values, "force");
    let ids: string[];
    if (all) {
      expectPositionals(args, "rm", [], { max: 0 });
      const sandboxes = await listSandboxes(context, listFilterOf(args.values));
      ids = sandboxes.filter((info) => info.state !== "destroyed").map((info) => info.id);
    } else {
      if (stringListOption(args.values, "label").length > 0) throw usageError("sbox rm: --label needs --all");
      const targets = await sandboxTargets(context, args);
      ids = [
        ...new Set(
          expectPositionals({ ...args, positionals: targets }, "rm", ["ID", "ID..."], {
            min: 1,
            max: Number.POSITIVE_INFINITY,
          }),
        ),
      ];
    }
    if (ids.length === 0) {
      if (context.json) context.printJson([]);
      else context.note(context.err.dim("no sandboxes to remove"));
      return 0;
    }
    if (ids.length > 1 && !booleanOption(args.values, "yes")) {
      if (context.io.stdin.isTTY !== true) {
        throw usageError(`refusing to remove ${ids.length} sandboxes without confirmation: pass --yes`);
      }
      const shown = ids.length > 10 ? `${ids.slice(0, 10).join(", ")}, ...` : ids.join(", ");
      if (!(await confirm(context.io, `Remove ${ids.length} sandboxes (${shown})?`))) {
        context.note("cancelled, nothing removed");
        return EXIT_CODES.usage;
      }
    }
    const { code } = await forEachSandbox(context, ids, "removing", async (id) => {
      try {
        if (!(await viaRecord(context, id, "destroy"))) await (await context.connect(id)).destroy();
      } catch (error) {
        // Already gone is what rm wants; with --force that is not worth an error.
        if (force && SandboxError.isInstance(error) && error.code === "NotFound") return;
        throw error;
      }
    });
    return code;
  },
};
