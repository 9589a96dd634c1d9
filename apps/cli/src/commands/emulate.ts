import type { RunningEmulator } from "@sbox/emulators";
import { stringOption } from "../args/parse-command-line.js";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { usageError } from "../args/usage-error.js";
import { parseInteger } from "../args/value-parsers.js";
import type { CliContext } from "../cli-context.js";
import { trapInterrupts } from "../signals.js";
import type { CommandDefinition } from "./command-definition.js";

/** Loaded on first use: nothing of the emulators is imported unless `sbox emulate` runs. */
function loadEmulators(): Promise<typeof import("@sbox/emulators")> {
  return import("@sbox/emulators");
}

/** A shell-safe `export NAME='value'` line. */
function exportLine(name: string, value: string): string {
  return `export ${name}='${value.replaceAll("'", "'\\''")}'\n`;
}

/** Resolves when the first SIGINT/SIGTERM/SIGHUP arrives. */
function untilInterrupted(context: CliContext): Promise<string> {
  return new Promise((resolve) => {
    const untrap = trapInterrupts(
      (signal) => {
        untrap();
        resolve(signal);
      },
      () => context.note("stopped before every machine was cleaned up"),
    );
  });
}

/** `sbox emulate VENDOR`: runs an offline emulator of a vendor's API until interrupted. */
export const emulateCommand: CommandDefinition = {
  name: "emulate",
  summary:
    "run an offline emulator of a cloud sandbox API (e2b, fly, kubernetes) and print what its client needs",
  usage: ["sbox emulate [--port N] [--host ADDR] [--backend local|docker] VENDOR"],
  details:
    "Starts the emulator of @sbox/emulators for VENDOR (e2b: the E2B API, envd and sandbox proxy; fly: the\n" +
    "Fly Machines API and a Fly Proxy stand-in; kubernetes: an API server with one node) and prints, on\n" +
    "stdout, the environment variables that point the vendor's own client at it (`export NAME='value'`\n" +
    "lines) or the configuration file it reads (a kubeconfig for kubernetes), or both as an object with\n" +
    "--json. Every emulated machine is a sandbox of the backend: provider-local (default) or docker. The\n" +
    "emulator runs until Ctrl-C (or SIGTERM), then destroys every machine it made and exits 0.",
  options: {
    port: {
      type: "string",
      valueName: "N",
      description: "port of the API (e2b's sandbox traffic uses N+1); default: free ports",
    },
    host: { type: "string", valueName: "ADDR", description: "address to listen on (default 127.0.0.1)" },
    backend: {
      type: "string",
      valueName: "NAME",
      description: "where machines run: local (default) or docker",
    },
  },
  examples: [
    "sbox emulate e2b > e2b.env &   # then: . ./e2b.env && npm test   (kill %1 stops it)",
    "sbox emulate fly --backend docker --port 4280",
    "sbox emulate kubernetes > kubeconfig &   # then: KUBECONFIG=kubeconfig kubectl get pods",
    "sbox emulate daytona > daytona.env &   # DAYTONA_API_URL, DAYTONA_API_KEY, DAYTONA_TARGET",
  ],
  async run(context, args) {
    const [vendorName] = expectPositionals(args, "emulate", ["VENDOR"]);
    expectNoCommand(args, "emulate");
    const { EMULATORS, EMULATOR_BACKEND_NAMES } = await loadEmulators();
    const vendor = EMULATORS[vendorName!];
    if (!vendor) {
      throw usageError(
        `sbox emulate: unknown vendor ${JSON.stringify(vendorName)}; emulators: ${Object.keys(EMULATORS).join(", ")}`,
      );
    }
    const backend = stringOption(args.values, "backend") ?? "local";
    if (!(EMULATOR_BACKEND_NAMES as readonly string[]).includes(backend)) {
      throw usageError(
        `sbox emulate: --backend must be ${EMULATOR_BACKEND_NAMES.join(" or ")}, got ${JSON.stringify(backend)}`,
      );
    }
    const portText = stringOption(args.values, "port");
    const port = portText === undefined ? undefined : parseInteger(portText, "--port", 1, 65534);
    const host = stringOption(args.values, "host");
    const interrupted = untilInterrupted(context);
    const emulator: RunningEmulator = await context.waitFor(`starting the ${vendorName} emulator`, () =>
      vendor.start({
        backend: backend as (typeof EMULATOR_BACKEND_NAMES)[number],
        ...(port === undefined ? {} : { port }),
        ...(host === undefined ? {} : { host }),
      }),
    );
    try {
      if (context.json) {
        context.printJson({
          vendor: vendorName,
          url: emulator.url,
          backend: emulator.backend,
          env: emulator.env,
          ...(emulator.config ? { [emulator.config.name]: emulator.config.text } : {}),
        });
      } else {
        for (const [name, value] of Object.entries(emulator.env)) context.print(exportLine(name, value));
        if (emulator.config) context.print(emulator.config.text);
      }
      context.note(
        context.err.dim(
          `${vendorName} emulator at ${emulator.url} (machines on the ${emulator.backend} backend) for ${vendor.client}; Ctrl-C stops it`,
        ),
      );
      const signal = await interrupted;
      context.note(context.err.dim(`${signal}: stopping the emulator and destroying its machines...`));
    } finally {
      await emulator.close();
    }
    return 0;
  },
};
