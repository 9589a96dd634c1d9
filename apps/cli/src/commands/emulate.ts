import { stringOption } from "../args/parse-command-line.js";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { usageError } from "../args/usage-error.js";
import { parseInteger } from "../args/value-parsers.js";
import { trapInterrupts } from "../signals.js";
import type { CommandDefinition } from "./command-definition.js";

/**
 * `sbox emulate VENDOR`: starts an offline emulator of a vendor's API from `@sbox/emulators`, prints what
 * the vendor's client needs (variables as `export` lines, a configuration file such as a kubeconfig, or
 * both as JSON), and serves until interrupted — then every machine it made is destroyed.
 */
export const emulateCommand: CommandDefinition = {
  name: "emulate",
  summary: "run an offline emulator of a vendor's API (e2b, fly, kubernetes) until Ctrl-C",
  usage: ["sbox emulate VENDOR [--backend local|docker] [--port N] [--host ADDR] [--json]"],
  details:
    "Machines of the emulator are sandboxes of the backend (local, or docker). Prints the environment\n" +
    "variables (as export lines) or the configuration file (a kubeconfig for kubernetes) the vendor's own\n" +
    "client needs, then serves until SIGINT/SIGTERM, when it destroys every machine it made.",
  options: {
    backend: {
      type: "string",
      valueName: "NAME",
      description: "backend provider of the machines: local or docker",
    },
    port: { type: "string", valueName: "N", description: "port to listen on (default: a free one)" },
    host: { type: "string", valueName: "ADDR", description: "address to listen on (default 127.0.0.1)" },
  },
  examples: [
    "sbox emulate kubernetes > kubeconfig && KUBECONFIG=kubeconfig kubectl get pods",
    'eval "$(sbox emulate fly)"',
  ],
  async run(context, args) {
    const [vendor] = expectPositionals(args, "emulate", ["VENDOR"]);
    expectNoCommand(args, "emulate");
    let emulators: typeof import("@sbox/emulators");
    try {
      emulators = await import("@sbox/emulators");
    } catch {
      throw usageError(
        "sbox emulate needs @sbox/emulators installed next to the CLI (pnpm add @sbox/emulators)",
      );
    }
    const entry = emulators.EMULATORS[vendor!];
    if (!entry)
      throw usageError(
        `unknown vendor ${JSON.stringify(vendor)}: use one of ${Object.keys(emulators.EMULATORS).join(", ")}`,
      );
    const backend = stringOption(args.values, "backend");
    if (backend !== undefined && !(emulators.EMULATOR_BACKEND_NAMES as readonly string[]).includes(backend)) {
      throw usageError(`--backend must be one of ${emulators.EMULATOR_BACKEND_NAMES.join(", ")}`);
    }
    const portText = stringOption(args.values, "port");
    const running = await context.waitFor(`starting the ${vendor} emulator`, () =>
      entry.start({
        ...(backend ? { backend: backend as "local" | "docker" } : {}),
        ...(portText ? { port: parseInteger(portText, "--port", 1, 65535) } : {}),
        ...(stringOption(args.values, "host") ? { host: stringOption(args.values, "host") } : {}),
      }),
    );
    if (context.json) {
      context.printJson({
        vendor,
        url: running.url,
        backend: running.backend,
        env: running.env,
        ...(running.config ? { [running.config.name]: running.config.text } : {}),
      });
    } else {
      for (const [key, value] of Object.entries(running.env))
        context.print(`export ${key}=${JSON.stringify(value)}\n`);
      if (running.config) context.print(running.config.text);
    }
    context.note(
      `${vendor} emulator at ${running.url} (machines on ${running.backend}); Ctrl-C stops it and destroys its machines`,
    );
    await new Promise<void>((resolve) => {
      const untrap = trapInterrupts(() => {
        untrap();
        resolve();
      });
    });
    await context.waitFor("destroying the emulator's machines", () => running.close());
    return 0;
  },
};
