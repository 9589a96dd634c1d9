import { SandboxError } from "../errors/sandbox-error.js";

/**
 * Turns a raw setting into its value, or throws {@link invalidSetting} naming what is wrong. `raw` is the
 * value the user passed, or the text of the environment variable (`from: "env"`).
 */
export type SettingParser<T> = (raw: unknown, from: "option" | "env") => T;

/** Where one provider setting comes from: the explicit option, else an environment variable, else a default. */
export interface SettingSource<T> {
  /** The option's name as the user writes it, e.g. `"apiToken"`; named in error messages. */
  readonly option: string;
  /** The value the user passed (`undefined` when absent). */
  readonly value: unknown;
  /** Environment variable(s) read when the option is absent, the first non-empty one wins. */
  readonly env?: string | readonly string[] | undefined;
  /** Parses and validates the value (see {@link settingParsers}). */
  readonly parse: SettingParser<T>;
  /** A credential: an error about it never quotes the value. */
  readonly secret?: boolean | undefined;
}

class InvalidSetting extends Error {}

/** Thrown by a {@link SettingParser}: `expected` completes "<option> must …", e.g. "be a positive number". */
export function invalidSetting(expected: string): never {
  throw new InvalidSetting(expected);
}

/**
 * Reads an environment variable without touching `process` where none exists (edge runtimes); an empty
 * value counts as unset.
 */
export function readEnv(name: string): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const value = env?.[name];
  return value === undefined || value === "" ? undefined : value;
}

/**
 * Reads one provider setting: the explicit option when it is not `undefined`, else the first set
 * environment variable of `source.env`, else `fallback`. Whatever was found is parsed; a value that does
 * not parse is a `Validation` error naming the provider, the option or variable, and (unless the setting is
 * secret) the value.
 *
 * ```ts
 * const token = loadSetting("fly", { option: "apiToken", value: options.apiToken, env: "FLY_API_TOKEN",
 *   parse: settingParsers.string, secret: true });
 * const timeout = loadSetting("fly", { option: "requestTimeoutMs", value: options.requestTimeoutMs,
 *   parse: settingParsers.positiveNumber }, 30_000);
 * ```
 */
export function loadSetting<T>(provider: string, source: SettingSource<T>, fallback: T): T;
export function loadSetting<T>(provider: string, source: SettingSource<T>): T | undefined;
export function loadSetting<T>(provider: string, source: SettingSource<T>, fallback?: T): T | undefined {
  let raw: unknown = source.value;
  let from: "option" | "env" = "option";
  let name = source.option;
  if (raw === undefined) {
    const names = source.env === undefined ? [] : typeof source.env === "string" ? [source.env] : source.env;
    for (const variable of names) {
      const value = readEnv(variable);
      if (value !== undefined) {
        raw = value;
        from = "env";
        name = variable;
        break;
      }
    }
  }
  if (raw === undefined) return fallback;
  try {
    return source.parse(raw, from);
  } catch (error) {
    if (!(error instanceof InvalidSetting)) throw error;
    const shown = source.secret ? "" : `, got ${typeof raw === "string" ? JSON.stringify(raw) : String(raw)}`;
    const where =
      from === "env" ? `${provider}(): the environment variable ${name}` : `${provider}(): ${name}`;
    throw new SandboxError("Validation", `${where} must ${error.message}${shown}`, {
      provider,
      retryable: false,
    });
  }
}

function numberOf(raw: unknown, from: "option" | "env"): number {
  const value = from === "env" && typeof raw === "string" && raw.trim() !== "" ? Number(raw) : raw;
  return typeof value === "number" ? value : Number.NaN;
}

/** The parsers every provider needs; build others with {@link invalidSetting}. */
export interface SettingParsers {
  /** Any non-empty string. */
  readonly string: SettingParser<string>;
  /** A finite number greater than 0 (from the environment: its decimal text). */
  readonly positiveNumber: SettingParser<number>;
  /** An integer of 0 or more. */
  readonly nonNegativeInteger: SettingParser<number>;
  /** `true`/`false` (from the environment: `1`, `0`, `true`, `false`, `yes`, `no`). */
  readonly boolean: SettingParser<boolean>;
  /** An absolute URL with one of `protocols` (e.g. `["http:", "https:"]`); returned without a trailing slash. */
  url(protocols: readonly string[]): SettingParser<string>;
  /** A string matching `pattern`; `description` completes "must be …". */
  matching(pattern: RegExp, description: string): SettingParser<string>;
}

/** Ready-made {@link SettingParser}s. */
export const settingParsers: SettingParsers = {
  string: (raw) => (typeof raw === "string" && raw !== "" ? raw : invalidSetting("be a non-empty string")),
  positiveNumber: (raw, from) => {
    const value = numberOf(raw, from);
    return Number.isFinite(value) && value > 0 ? value : invalidSetting("be a positive number");
  },
  nonNegativeInteger: (raw, from) => {
    const value = numberOf(raw, from);
    return Number.isInteger(value) && value >= 0 ? value : invalidSetting("be a non-negative integer");
  },
  boolean: (raw, from) => {
    if (typeof raw === "boolean") return raw;
    if (from === "env" && typeof raw === "string") {
      const text = raw.trim().toLowerCase();
      if (["1", "true", "yes"].includes(text)) return true;
      if (["0", "false", "no"].includes(text)) return false;
    }
    return invalidSetting("be true or false");
  },
  url: (protocols) => (raw) => {
    if (typeof raw !== "string") return invalidSetting(`be a URL (${protocols.join(" or ")})`);
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      return invalidSetting(`be a URL (${protocols.join(" or ")})`);
    }
    if (!protocols.includes(parsed.protocol)) return invalidSetting(`be a ${protocols.join(" or ")} URL`);
    return raw.replace(/\/+$/, "");
  },
  matching: (pattern, description) => (raw) =>
    typeof raw === "string" && pattern.test(raw) ? raw : invalidSetting(description),
};
