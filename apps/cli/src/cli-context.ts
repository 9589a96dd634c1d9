import type { Sandbox, SandboxClient, SandboxProvider } from "@sbox/core";
import { createSandboxClient } from "@sbox/core";
import type { OptionValues } from "./args/parse-command-line.js";
import { booleanOption, stringListOption, stringOption } from "./args/parse-command-line.js";
import { usageError } from "./args/usage-error.js";
import { parseProviderOptions } from "./args/value-parsers.js";
import { readCliConfig } from "./cli-config.js";
import type { CliIo } from "./cli-io.js";
import { type Colours, colourEnabled, createColours } from "./output/colour.js";
import { toJson } from "./output/json-output.js";
import { type Spinner, startSpinner } from "./output/spinner.js";
import { DEFAULT_PROVIDER } from "./providers/known-providers.js";
import { instantiateProvider, loadProviderPackage } from "./providers/load-provider.js";
import { type CliRecords, openRecords } from "./records/cli-records.js";

/** Everything a command needs: streams, output style, and clients for the chosen provider. */
export interface CliContext {
  readonly io: CliIo;
  /** `--json`: data goes to stdout as JSON, nothing else does. */
  readonly json: boolean;
  readonly debug: boolean;
  /** The provider chosen by `--provider`, `SBOX_PROVIDER`, the config file, or the default. */
  readonly providerName: string;
  /** The options a provider is built with: the config file's for it, then `-o` options on top. */
  providerOptions(providerName?: string): Record<string, unknown>;
  /** Colours for stdout and stderr (each on only when that stream is a terminal). */
  readonly out: Colours;
  readonly err: Colours;
  /** Writes text to stdout. */
  print(text: string): void;
  /** Writes a value as JSON to stdout. */
  printJson(value: unknown): void;
  /** A one-line notice on stderr (suppressed nowhere: stderr is never parsed). */
  note(text: string): void;
  /** A spinner on stderr, only on a terminal and only after 300 ms. */
  spinner(text: string): Spinner;
  /** Runs `work` under a spinner. */
  waitFor<T>(text: string, work: () => Promise<T>): Promise<T>;
  /** The provider object of a name (the chosen one by default); built once. */
  provider(providerName?: string): Promise<SandboxProvider>;
  /** The client of a provider (the chosen one by default); created once, disposed at exit. */
  client(providerName?: string): Promise<SandboxClient>;
  /** The durable records (`@sbox/manager`), when installed and not turned off; opened once. */
  records(): Promise<CliRecords | undefined>;
  /** Connects to a sandbox; an id `docker:abc` uses provider docker unless `--provider` says otherwise. */
  connect(id: string): Promise<Sandbox>;
  /** The provider an id belongs to. */
  providerOfId(id: string): string;
  /** Releases every client. */
  dispose(): Promise<void>;
}

/** Builds the context from the parsed global options. */
export function createCliContext(io: CliIo, values: OptionValues): CliContext {
  const explicitProvider = stringOption(values, "provider");
  const envProvider = io.env.SBOX_PROVIDER?.trim() || undefined;
  const config = readCliConfig(io.env);
  const providerName = explicitProvider ?? envProvider ?? config.provider ?? DEFAULT_PROVIDER;
  const cliOptions = parseProviderOptions(stringListOption(values, "provider-option"));
  const optionsOf = (name: string): Record<string, unknown> => ({
    ...(config.providers?.[name] ?? {}),
    ...cliOptions,
  });
  const json = booleanOption(values, "json");
  const debug = booleanOption(values, "debug") || io.env.SBOX_DEBUG === "1";
  const out = createColours(colourEnabled(io.stdout, io.env));
  const err = createColours(colourEnabled(io.stderr, io.env));
  const clients = new Map<string, Promise<SandboxClient>>();
  const providers = new Map<string, Promise<SandboxProvider>>();
  let records: Promise<CliRecords | undefined> | undefined;
  const spinnerEnabled = io.stderr.isTTY === true && io.env.TERM !== "dumb";
  let spinnerActive = false;

  const context: CliContext = {
    io,
    json,
    debug,
    providerName,
    providerOptions: (name = providerName) => optionsOf(name),
    out,
    err,
    print(text) {
      io.stdout.write(text);
    },
    printJson(value) {
      io.stdout.write(toJson(value));
    },
    note(text) {
      io.stderr.write(`${text}\n`);
    },
    spinner(text) {
      return startSpinner(io.stderr, text, { enabled: spinnerEnabled, style: err.cyan });
    },
    async waitFor(text, work) {
      // One spinner at a time: nested waits (connect inside an operation) keep the outer line.
      if (spinnerActive) return work();
      spinnerActive = true;
      const spinner = context.spinner(text);
      try {
        return await work();
      } finally {
        spinner.stop();
        spinnerActive = false;
      }
    },
    provider(name = providerName) {
      let provider = providers.get(name);
      if (!provider) {
        provider = loadProviderPackage(name, io.cwd).then((pkg) => instantiateProvider(pkg, optionsOf(name)));
        providers.set(name, provider);
      }
      return provider;
    },
    client(name = providerName) {
      let client = clients.get(name);
      if (!client) {
        client = context.provider(name).then((provider) => createSandboxClient({ provider }));
        clients.set(name, client);
      }
      return client;
    },
    records() {
      records ??= openRecords(io).then(({ records: opened, reason }) => {
        if (!opened && debug && reason) io.stderr.write(`${err.dim(`records off: ${reason}`)}\n`);
        return opened;
      });
      return records;
    },
    providerOfId(id) {
      const colon = id.indexOf(":");
      const prefix = colon > 0 ? id.slice(0, colon) : undefined;
      if (!prefix || !/^[a-z0-9][a-z0-9-]*$/.test(prefix)) return providerName;
      if (
        explicitProvider &&
        explicitProvider !== prefix &&
        !explicitProvider.endsWith(`provider-${prefix}`)
      ) {
        throw usageError(
          `sandbox ${id} belongs to provider ${prefix}, but --provider ${explicitProvider} was given`,
        );
      }
      return explicitProvider ?? prefix;
    },
    async connect(id) {
      if (id.trim() === "") throw usageError("a sandbox id must not be empty");
      const client = await context.client(context.providerOfId(id));
      return context.waitFor(`connecting to ${id}`, () => client.connect(id));
    },
    async dispose() {
      const all = [...clients.values()];
      clients.clear();
      await Promise.allSettled(all.map(async (client) => (await client).dispose()));
      const opened = records;
      records = undefined;
      if (opened) await (await opened.catch(() => undefined))?.close();
    },
  };
  return context;
}
