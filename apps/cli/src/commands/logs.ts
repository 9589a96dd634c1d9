import { booleanOption } from "../args/parse-command-line.js";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { parseInteger } from "../args/value-parsers.js";
import { NAME_OPTION, sandboxTarget } from "../records/sandbox-names.js";
import type { CommandDefinition } from "./command-definition.js";

/** How long `logs` without `--follow` waits for more output from a running process before it stops. */
const SETTLE_MS = 300;

/** `sbox logs ID PID`: the output of a background process. */
export const logsCommand: CommandDefinition = {
  name: "logs",
  summary: "print the output of a background process (--follow to stream until it exits)",
  usage: ["sbox logs [--follow] ID PID", "sbox logs [--follow] --name NAME PID"],
  details:
    "Re-attaches with commands.connect(PID) (needs the background capability) and prints the output the\n" +
    "provider kept, stdout to stdout and stderr to stderr. Without --follow it stops once the kept output\n" +
    "is printed; with --follow it streams until the process exits. --json prints one JSON object per chunk.",
  options: {
    follow: { type: "boolean", short: "f", description: "keep streaming until the process exits" },
    name: NAME_OPTION,
  },
  examples: ["sbox logs local:3f2a 4242", "sbox logs -f docker:91bc 17"],
  async run(context, args) {
    const target = await sandboxTarget(context, args);
    const [id, pidText] = expectPositionals(
      { ...args, positionals: target.id === undefined ? [] : [target.id, ...target.rest] },
      "logs",
      ["ID", "PID"],
    );
    expectNoCommand(args, "logs");
    const pid = parseInteger(pidText!, "PID", 1, 2 ** 31 - 1);
    const follow = booleanOption(args.values, "follow");
    const sandbox = await context.connect(id!);
    const process = await context.waitFor(`attaching to process ${pid}`, () => sandbox.commands.connect(pid));
    let lastChunkAt = Date.now();
    let stopped = false;
    const pump = async (stream: AsyncIterable<string>, name: "stdout" | "stderr"): Promise<void> => {
      for await (const chunk of stream) {
        if (stopped) return;
        lastChunkAt = Date.now();
        if (context.json) context.io.stdout.write(`${JSON.stringify({ stream: name, data: chunk })}\n`);
        else context.io[name].write(chunk);
      }
    };
    const drained = Promise.all([pump(process.stdout, "stdout"), pump(process.stderr, "stderr")]);
    if (follow) {
      await drained;
      await process.wait();
      return 0;
    }
    // Without --follow: print what is there, then stop once the stream has been quiet for a moment or
    // the process has ended (which ends both streams).
    await new Promise<void>((resolve, reject) => {
      drained.then(() => resolve(), reject);
      const timer = setInterval(() => {
        if (Date.now() - lastChunkAt >= SETTLE_MS) {
          clearInterval(timer);
          resolve();
        }
      }, 50);
      drained.finally(() => clearInterval(timer)).catch(() => {});
    });
    stopped = true;
    return 0;
  },
};
