import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { parseDuration } from "../args/value-parsers.js";
import type { CommandDefinition } from "./command-definition.js";

/** `sbox ttl ID DURATION`: gives a sandbox a new time to live, counted from now. */
export const ttlCommand: CommandDefinition = {
  name: "ttl",
  summary: "set a sandbox's time to live, counted from now (setTimeout)",
  usage: ["sbox ttl [--json] ID DURATION"],
  details:
    "Needs the setTimeout capability. An expired sandbox that was stopped by `sbox reap` can be resumed\n" +
    "after it has been given more time.",
  options: {},
  examples: ["sbox ttl local:3f2a 2h && sbox resume local:3f2a"],
  async run(context, args) {
    const [id, durationText] = expectPositionals(args, "ttl", ["ID", "DURATION"]);
    expectNoCommand(args, "ttl");
    const ttlMs = parseDuration(durationText!, "DURATION");
    const sandbox = await context.connect(id!);
    await context.waitFor(`setting the time to live of ${id}`, () => sandbox.setTimeout(ttlMs));
    const info = await sandbox.getInfo();
    const expiresAt = info.expiresAt?.toISOString() ?? null;
    if (context.json) context.printJson({ id: sandbox.id, expiresAt });
    else context.print(`${sandbox.id} expires ${expiresAt ?? "never"}\n`);
    return 0;
  },
};
