import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { parseDuration } from "../args/value-parsers.js";
import { managerFor, recordOfSandbox } from "../records/record-operations.js";
import { NAME_OPTION, sandboxTarget } from "../records/sandbox-names.js";
import type { CommandDefinition } from "./command-definition.js";

/** `sbox ttl ID DURATION`: gives a sandbox a new time to live, counted from now. */
export const ttlCommand: CommandDefinition = {
  name: "ttl",
  summary: "set a sandbox's time to live, counted from now",
  usage: ["sbox ttl [--json] ID DURATION", "sbox ttl [--json] --name NAME DURATION"],
  details:
    "For a recorded sandbox the record's expiry is moved (enforced by `sbox reap`); otherwise the provider's\n" +
    "setTimeout is used. A sandbox stopped by `sbox reap` can be resumed after it has been given more time.",
  options: { name: NAME_OPTION },
  examples: ["sbox ttl local:3f2a 2h && sbox resume local:3f2a"],
  async run(context, args) {
    const target = await sandboxTarget(context, args);
    const [id, durationText] = expectPositionals(
      { ...args, positionals: target.id === undefined ? [] : [target.id, ...target.rest] },
      "ttl",
      ["ID", "DURATION"],
    );
    expectNoCommand(args, "ttl");
    const ttlMs = parseDuration(durationText!, "DURATION");
    const record = await recordOfSandbox(context, id!);
    const manager = record ? await managerFor(context, [record.provider]) : undefined;
    let sandboxId: string;
    let expiresAt: string | null;
    if (record && manager) {
      const updated = await context.waitFor(`extending ${id}`, () => manager.extendTimeout(record.id, ttlMs));
      sandboxId = updated.sandboxId ?? id!;
      expiresAt = updated.expiresAt?.toISOString() ?? null;
    } else {
      const sandbox = await context.connect(id!);
      await context.waitFor(`setting the time to live of ${id}`, () => sandbox.setTimeout(ttlMs));
      sandboxId = sandbox.id;
      expiresAt = (await sandbox.getInfo()).expiresAt?.toISOString() ?? null;
    }
    if (context.json) context.printJson({ id: sandboxId, expiresAt });
    else context.print(`${sandboxId} expires ${expiresAt ?? "never"}\n`);
    return 0;
  },
};
