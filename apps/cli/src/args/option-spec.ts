/** One option of a command, as given to `node:util` parseArgs plus what `--help` prints. */
export interface OptionSpec {
  readonly type: "string" | "boolean";
  readonly short?: string | undefined;
  readonly multiple?: boolean | undefined;
  /** One line for `--help`. */
  readonly description: string;
  /** Placeholder shown in help for string options, e.g. `K=V`. */
  readonly valueName?: string | undefined;
}

/** Options by long name. */
export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

/** Options every command accepts. */
export const GLOBAL_OPTIONS: OptionSpecs = {
  provider: {
    type: "string",
    short: "p",
    valueName: "NAME",
    description: "provider to use (default: $SBOX_PROVIDER, else local); ids like docker:abc pick their own",
  },
  "provider-option": {
    type: "string",
    short: "o",
    multiple: true,
    valueName: "KEY=VALUE",
    description: "option passed to the provider factory (repeatable), e.g. -o image=busybox",
  },
  json: { type: "boolean", description: "print machine-readable JSON on stdout" },
  debug: { type: "boolean", description: "print stack traces and causes of errors" },
  help: { type: "boolean", short: "h", description: "show help" },
};
