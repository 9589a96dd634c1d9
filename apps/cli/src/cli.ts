import { parseArgs } from "node:util";
import { findCommandIndex, parseCommandLine } from "./args/parse-command-line.js";
import { usageError } from "./args/usage-error.js";
import { type CliContext, createCliContext } from "./cli-context.js";
import { type CliIo, processIo } from "./cli-io.js";
import { ALL_COMMANDS, COMMAND_ALIASES } from "./commands/all-commands.js";
import type { CommandDefinition } from "./commands/command-definition.js";
import { renderCommandHelp, renderMainHelp } from "./help.js";
import { colourEnabled, createColours } from "./output/colour.js";
import { exitCodeForError, formatErrorLine } from "./output/error-line.js";
import { EXIT_CODES } from "./output/exit-codes.js";
import { cliVersion } from "./version.js";

function findCommand(name: string): CommandDefinition | undefined {
  const canonical = COMMAND_ALIASES[name] ?? name;
  return ALL_COMMANDS.find((command) => command.name === canonical);
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j += 1) {
      const current = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length]!;
}

function unknownCommand(name: string): Error {
  const names = [...ALL_COMMANDS.map((command) => command.name), ...Object.keys(COMMAND_ALIASES)];
  const closest = names
    .map((candidate) => ({ candidate, distance: editDistance(name, candidate) }))
    .sort((a, b) => a.distance - b.distance)[0];
  const hint = closest && closest.distance <= 2 ? `; did you mean "${closest.candidate}"?` : "";
  return usageError(`unknown command ${JSON.stringify(name)}${hint} (see: sbox --help)`);
}

/**
 * Runs one `sbox` invocation and resolves with its exit code. Every failure becomes one error line on
 * stderr (`error[<code>]: <message>`) and the exit code of its class; nothing is thrown.
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const stderrColours = createColours(colourEnabled(io.stderr, io.env));
  const stdoutColours = createColours(colourEnabled(io.stdout, io.env));
  const beforeTerminator = argv.includes("--") ? argv.slice(0, argv.indexOf("--")) : argv;
  const debug = beforeTerminator.includes("--debug") || io.env.SBOX_DEBUG === "1";
  let context: CliContext | undefined;
  try {
    const index = findCommandIndex(
      argv,
      ALL_COMMANDS.map((command) => command.options),
      (token) => findCommand(token) !== undefined || token === "help",
    );
    if (index === -1) {
      const { values } = parseArgs({
        args: [...beforeTerminator],
        options: {
          help: { type: "boolean", short: "h" },
          version: { type: "boolean", short: "V" },
          json: { type: "boolean" },
          debug: { type: "boolean" },
          provider: { type: "string", short: "p" },
          "provider-option": { type: "string", short: "o", multiple: true },
        },
        strict: false,
        allowPositionals: true,
      });
      if (values.version === true) {
        io.stdout.write(`${cliVersion()}\n`);
        return EXIT_CODES.ok;
      }
      if (values.help === true) {
        io.stdout.write(renderMainHelp(ALL_COMMANDS, cliVersion(), stdoutColours));
        return EXIT_CODES.ok;
      }
      io.stderr.write(renderMainHelp(ALL_COMMANDS, cliVersion(), stderrColours));
      throw usageError("missing command (see: sbox --help)");
    }
    const name = argv[index]!;
    const rest = [...argv.slice(0, index), ...argv.slice(index + 1)];
    if (name === "help") {
      const topic = rest.find((token) => !token.startsWith("-"));
      if (topic === undefined) {
        io.stdout.write(renderMainHelp(ALL_COMMANDS, cliVersion(), stdoutColours));
        return EXIT_CODES.ok;
      }
      const command = findCommand(topic);
      if (!command) throw unknownCommand(topic);
      io.stdout.write(renderCommandHelp(command, stdoutColours));
      return EXIT_CODES.ok;
    }
    const command = findCommand(name);
    if (!command) throw unknownCommand(name);
    const args = parseCommandLine(rest, command.options, command.name, command);
    if (args.values.help === true) {
      io.stdout.write(renderCommandHelp(command, stdoutColours));
      return EXIT_CODES.ok;
    }
    context = createCliContext(io, args.values);
    return await command.run(context, args);
  } catch (error) {
    io.stderr.write(formatErrorLine(error, { colours: stderrColours, debug }));
    return exitCodeForError(error);
  } finally {
    await context?.dispose();
  }
}
