import { stringOption } from "../args/parse-command-line.js";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { parseDuration, parseInteger } from "../args/value-parsers.js";
import { NAME_OPTION, sandboxTarget } from "../records/sandbox-names.js";
import type { CommandDefinition } from "./command-definition.js";

/** `sbox kill ID PID`: ends a process of a sandbox and its whole tree. */
export const killCommand: CommandDefinition = {
  name: "kill",
  summary: "end a process of a sandbox and its tree (SIGTERM, then SIGKILL after a grace period)",
  usage: ["sbox kill [--signal SIG] [--grace DURATION] ID PID", "sbox kill [options] --name NAME PID"],
  details:
    "PID is the id `sbox exec -d` printed (see `sbox ps`). Without --signal the process gets SIGTERM and,\n" +
    "if it is still there after the grace period (default 3s), SIGKILL. With --signal only that signal is\n" +
    "sent, unless --grace is given too. Needs the killProcess capability.",
  options: {
    signal: {
      type: "string",
      short: "s",
      valueName: "SIG",
      description: "signal to send, e.g. INT, HUP, KILL",
    },
    grace: {
      type: "string",
      valueName: "DURATION",
      description: "how long to wait after the first signal before SIGKILL (default 3s)",
    },
    name: NAME_OPTION,
  },
  examples: ["sbox kill local:3f2a 4242", "sbox kill -s INT --grace 10s docker:91bc 17"],
  async run(context, args) {
    const target = await sandboxTarget(context, args);
    const [id, pidText] = expectPositionals(
      { ...args, positionals: target.id === undefined ? [] : [target.id, ...target.rest] },
      "kill",
      ["ID", "PID"],
    );
    expectNoCommand(args, "kill");
    const pid = parseInteger(pidText!, "PID", 1, 2 ** 31 - 1);
    const signal = stringOption(args.values, "signal");
    const grace = stringOption(args.values, "grace");
    const sandbox = await context.connect(id!);
    await context.waitFor(`ending process ${pid}`, () =>
      sandbox.commands.kill(
        pid,
        signal,
        grace === undefined ? {} : { graceMs: parseDuration(grace, "--grace") },
      ),
    );
    if (context.json) context.printJson({ id: sandbox.id, pid, killed: true });
    return 0;
  },
};
