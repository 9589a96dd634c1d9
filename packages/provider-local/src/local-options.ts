import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { optionRules, type ProviderOptionRules, validateProviderOptions } from "@sbox/core/spec";
import { LOCAL_PROVIDER_NAME, localError } from "./local-errors.js";

/** How commands are isolated: bubblewrap when available (`auto`), always (`bwrap`), or not at all (`none`). */
export type LocalIsolationRequest = "auto" | "bwrap" | "none";

/** Outbound network policy the local provider can enforce (allow-lists would need a proxy). */
export type LocalEgress = "allow-all" | "block-all";

/** Options of {@link local}. */
export interface LocalOptions {
  /**
   * State root holding one directory per sandbox. Default: `$SBOX_HOME/local` when `SBOX_HOME` is set,
   * else `~/.sbox/local`.
   */
  root?: string | undefined;
  /** Default `"auto"`: bubblewrap when it is installed and works, else no isolation (with one warning). */
  isolation?: LocalIsolationRequest | undefined;
  /** Default network policy of new sandboxes (default `"allow-all"`); `"block-all"` needs bubblewrap. */
  network?: { egress?: LocalEgress | undefined } | undefined;
  /** Path of the `bwrap` executable (default: looked up on `PATH`, then `/usr/bin/bwrap`). */
  bwrapPath?: string | undefined;
  /** Shell used for string commands (default `/bin/sh`). */
  shell?: string | undefined;
  /**
   * `PATH` of commands in the sandbox (default: the host's `PATH`). No other host variable is passed on:
   * the host environment often holds credentials.
   */
  path?: string | undefined;
}

/** The state root for `options`: explicit root, else `$SBOX_HOME/local`, else `~/.sbox/local`. */
export function resolveStateRoot(options: LocalOptions, env: NodeJS.ProcessEnv = process.env): string {
  if (options.root !== undefined) {
    if (typeof options.root !== "string" || options.root === "" || options.root.includes("\0")) {
      throw localError("Validation", "local({ root }) must be a non-empty path");
    }
    return resolve(options.root);
  }
  const home = env.SBOX_HOME;
  if (home !== undefined && home !== "") {
    if (!isAbsolute(home))
      throw localError("Validation", `SBOX_HOME must be an absolute path, got ${JSON.stringify(home)}`);
    return join(resolve(home), "local");
  }
  return join(homedir(), ".sbox", "local");
}

/** Every option of {@link local} and what it takes: anything else is refused, not ignored. */
const LOCAL_OPTION_RULES: ProviderOptionRules = {
  root: optionRules.nonEmptyString(),
  isolation: optionRules.oneOf(["auto", "bwrap", "none"]),
  network: optionRules.object({
    egress: optionRules.custom('"allow-all" or "block-all"', (value) =>
      value === "allow-all" || value === "block-all"
        ? undefined
        : `must be "allow-all" or "block-all" (allow-lists are not supported locally), got ${JSON.stringify(value)}`,
    ),
  }),
  bwrapPath: optionRules.nonEmptyString(),
  shell: optionRules.nonEmptyString(),
  path: optionRules.nonEmptyString(),
};

/** Validates the options object itself (shapes only; nothing touches the filesystem). */
export function validateLocalOptions(options: LocalOptions): void {
  if (typeof options !== "object" || options === null)
    throw localError("Validation", "local() options must be an object");
  validateProviderOptions(LOCAL_PROVIDER_NAME, options, LOCAL_OPTION_RULES);
  const isolation = options.isolation;
  if (isolation !== undefined && isolation !== "auto" && isolation !== "bwrap" && isolation !== "none") {
    throw localError(
      "Validation",
      `isolation must be "auto", "bwrap" or "none", got ${JSON.stringify(isolation)}`,
    );
  }
  const egress = options.network?.egress;
  if (egress !== undefined && egress !== "allow-all" && egress !== "block-all") {
    throw localError(
      "Validation",
      `network.egress must be "allow-all" or "block-all" (allow-lists are not supported locally), got ${JSON.stringify(egress)}`,
    );
  }
  for (const key of ["bwrapPath", "shell", "path"] as const) {
    const value = options[key];
    if (value !== undefined && (typeof value !== "string" || value === "" || value.includes("\0"))) {
      throw localError("Validation", `local({ ${key} }) must be a non-empty string`);
    }
  }
}
