import {
  loadSetting,
  optionRules,
  type ProviderOptionRules,
  type SettingSource,
  settingParsers,
  validateProviderOptions,
} from "@sbox/core/spec";
import { E2B_PROVIDER_NAME } from "./e2b-capabilities.js";

/** The preview URL of a sandbox port: E2B's is `https://<port>-<id>.<domain>` (the SDK's `getHost`). */
export type E2BPreviewUrl = (target: { sandboxId: string; port: number; host: string }) => string;

/** Options of {@link e2b}. Every field is optional; without any, `E2B_API_KEY` and E2B's defaults are used. */
export interface E2BProviderOptions {
  /** E2B API key; defaults to the `E2B_API_KEY` environment variable. Never put into an error message. */
  apiKey?: string | undefined;
  /** E2B domain (default `E2B_DOMAIN` or `e2b.app`). */
  domain?: string | undefined;
  /** Template used when `spec.template` is not set (default `base`). */
  template?: string | undefined;
  /**
   * Lifetime of a sandbox created without `spec.ttlMs`, and of forks, in ms (default 300 000, E2B's own
   * default). E2B kills a sandbox when it expires; `sandbox.setTimeout()` moves the deadline.
   */
  timeoutMs?: number | undefined;
  /** Upper bound of each control-plane and daemon request in ms (default: the SDK's, 60 000). */
  requestTimeoutMs?: number | undefined;
  /** User commands, files and terminals run as (default: the template's user). */
  user?: string | undefined;
  /**
   * Whether `pause()` keeps memory and processes (default `true`). With `false` only the filesystem is kept
   * and `resume()` boots the sandbox again; `flags.preservesMemoryOnPause` follows this option.
   */
  pauseKeepsMemory?: boolean | undefined;
  /** Control-plane URL (default `https://api.<domain>`): for self-hosted E2B and local test servers. */
  apiUrl?: string | undefined;
  /** URL of every sandbox's daemon (envd), instead of the per-sandbox host: for local test servers. */
  sandboxUrl?: string | undefined;
  /** Extra headers on control-plane requests. */
  headers?: Readonly<Record<string, string>> | undefined;
  /**
   * The URL `ports.expose()` returns (default `https://<host>`, `host` being E2B's `<port>-<id>.<domain>`):
   * for self-hosted E2B and emulators whose proxy is reached another way.
   */
  previewUrl?: E2BPreviewUrl | undefined;
}

/** Options after defaults. */
export interface ResolvedE2BOptions {
  readonly apiKey: string | undefined;
  readonly domain: string | undefined;
  readonly template: string;
  readonly timeoutMs: number;
  readonly requestTimeoutMs: number | undefined;
  readonly user: string | undefined;
  readonly pauseKeepsMemory: boolean;
  readonly apiUrl: string | undefined;
  readonly sandboxUrl: string | undefined;
  readonly headers: Readonly<Record<string, string>> | undefined;
  readonly previewUrl: E2BPreviewUrl;
}

/** The template E2B uses when none is named. */
export const DEFAULT_TEMPLATE = "base";

/** E2B's default sandbox lifetime (5 minutes). */
export const DEFAULT_TIMEOUT_MS = 300_000;

/** The environment variable the SDK reads the API key from. */
export const API_KEY_ENV = "E2B_API_KEY";

const milliseconds = () => optionRules.positiveNumber("a positive number of milliseconds");

/** Every option of {@link e2b} and what it takes: anything else is refused, not ignored. */
const E2B_OPTION_RULES: ProviderOptionRules = {
  apiKey: optionRules.secret(),
  domain: optionRules.nonEmptyString(),
  template: optionRules.nonEmptyString(),
  timeoutMs: milliseconds(),
  requestTimeoutMs: milliseconds(),
  user: optionRules.nonEmptyString(),
  pauseKeepsMemory: optionRules.boolean(),
  apiUrl: optionRules.nonEmptyString(),
  sandboxUrl: optionRules.nonEmptyString(),
  headers: optionRules.custom("an object of strings", (value) =>
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((entry) => typeof entry === "string")
      ? undefined
      : "must be an object of strings",
  ),
  previewUrl: optionRules.function(),
};

/**
 * Checks the options (unknown keys and bad values are `Validation` errors, naming the key, never a
 * credential) and fills in defaults: each option, else its environment variable, else E2B's default.
 */
export function resolveE2BOptions(options: E2BProviderOptions): ResolvedE2BOptions {
  validateProviderOptions(E2B_PROVIDER_NAME, options, E2B_OPTION_RULES);
  const setting = <T>(source: SettingSource<T>): T | undefined => loadSetting(E2B_PROVIDER_NAME, source);
  const { positiveNumber, string } = settingParsers;
  return {
    apiKey: setting({
      option: "apiKey",
      value: options.apiKey,
      env: API_KEY_ENV,
      parse: string,
      secret: true,
    }),
    domain: options.domain,
    template: options.template ?? DEFAULT_TEMPLATE,
    timeoutMs:
      setting({ option: "timeoutMs", value: options.timeoutMs, parse: positiveNumber }) ?? DEFAULT_TIMEOUT_MS,
    requestTimeoutMs: setting({
      option: "requestTimeoutMs",
      value: options.requestTimeoutMs,
      parse: positiveNumber,
    }),
    user: options.user,
    pauseKeepsMemory: options.pauseKeepsMemory ?? true,
    apiUrl: options.apiUrl,
    sandboxUrl: options.sandboxUrl,
    headers: options.headers,
    previewUrl: options.previewUrl ?? (({ host }) => `https://${host}`),
  };
}
