import {
  loadSetting,
  optionRules,
  type ProviderOptionRules,
  SandboxError,
  type SettingSource,
  settingParsers,
  validateProviderOptions,
} from "@sbox/core/spec";
import { DAYTONA_PROVIDER_NAME } from "./daytona-names.js";

/** Options of {@link daytona}. Every field is optional; without any, Daytona's environment variables are used. */
export interface DaytonaProviderOptions {
  /** Daytona API key; defaults to `DAYTONA_API_KEY`. Never put into an error message. */
  apiKey?: string | undefined;
  /** Control-plane URL; defaults to `DAYTONA_API_URL`, else `https://app.daytona.io/api`. */
  apiUrl?: string | undefined;
  /** Region sandboxes are created in; defaults to `DAYTONA_TARGET`, else the organization's default. */
  target?: string | undefined;
  /** Snapshot used when `spec.template` is not set (default: Daytona's default snapshot). */
  snapshot?: string | undefined;
  /**
   * Create sandboxes from this container image instead of a snapshot (Daytona builds `FROM <image>`);
   * `spec.template` then names an image too, and `spec.resources` are honoured (Daytona sizes a snapshot's
   * sandbox by the snapshot and refuses resources with one). Not together with `snapshot`.
   */
  image?: string | undefined;
  /** Upper bound of each control-plane and toolbox request in ms (default 60 000). */
  requestTimeoutMs?: number | undefined;
  /** How long create waits for the sandbox to be started, in ms (default 120 000). */
  startTimeoutMs?: number | undefined;
  /**
   * Minutes a sandbox with a ttl is kept once stopped (by `client.reap()`, by Daytona's auto-stop, or by a
   * user) before Daytona deletes it (`autoDeleteInterval`; default 0: deleted as soon as it stops).
   */
  expiredDeleteAfterMinutes?: number | undefined;
  /** Auto-stop interval in minutes of a sandbox created without a ttl (default: Daytona's, 15). */
  autoStopMinutes?: number | undefined;
  /** Auto-archive interval in minutes (default: Daytona's, 7 days). */
  autoArchiveMinutes?: number | undefined;
  /** Auto-delete interval in minutes of a sandbox created without a ttl (default: Daytona's, never). */
  autoDeleteMinutes?: number | undefined;
}

/** Options after defaults. */
export interface ResolvedDaytonaOptions {
  readonly apiKey: string | undefined;
  readonly apiUrl: string | undefined;
  readonly target: string | undefined;
  readonly snapshot: string | undefined;
  readonly image: string | undefined;
  readonly requestTimeoutMs: number;
  readonly startTimeoutMs: number;
  readonly expiredDeleteAfterMinutes: number;
  readonly autoStopMinutes: number | undefined;
  readonly autoArchiveMinutes: number | undefined;
  readonly autoDeleteMinutes: number | undefined;
}

/** The environment variable the SDK reads the API key from. */
export const DAYTONA_API_KEY_ENV = "DAYTONA_API_KEY";

const milliseconds = () => optionRules.positiveNumber("a positive number of milliseconds");
const minutes = () =>
  optionRules.custom("a whole number of minutes (0 or more)", (value) =>
    typeof value === "number" && Number.isInteger(value) && value >= 0
      ? undefined
      : "must be a whole number of minutes, 0 or more",
  );

/** Every option of {@link daytona} and what it takes: anything else is refused, not ignored. */
const DAYTONA_OPTION_RULES: ProviderOptionRules = {
  apiKey: optionRules.secret(),
  apiUrl: optionRules.nonEmptyString(),
  target: optionRules.nonEmptyString(),
  snapshot: optionRules.nonEmptyString(),
  image: optionRules.nonEmptyString(),
  requestTimeoutMs: milliseconds(),
  startTimeoutMs: milliseconds(),
  expiredDeleteAfterMinutes: minutes(),
  autoStopMinutes: minutes(),
  autoArchiveMinutes: minutes(),
  autoDeleteMinutes: minutes(),
};

/**
 * Checks the options (unknown keys and bad values are `Validation` errors, naming the key, never a
 * credential) and fills in defaults: each option, else its environment variable, else Daytona's default.
 */
export function resolveDaytonaOptions(options: DaytonaProviderOptions): ResolvedDaytonaOptions {
  validateProviderOptions(DAYTONA_PROVIDER_NAME, options, DAYTONA_OPTION_RULES);
  if (options.snapshot !== undefined && options.image !== undefined) {
    throw new SandboxError("Validation", "daytona: give snapshot or image, not both", {
      provider: DAYTONA_PROVIDER_NAME,
    });
  }
  const setting = <T>(source: SettingSource<T>): T | undefined => loadSetting(DAYTONA_PROVIDER_NAME, source);
  const { positiveNumber, string } = settingParsers;
  return {
    apiKey: setting({
      option: "apiKey",
      value: options.apiKey,
      env: DAYTONA_API_KEY_ENV,
      parse: string,
      secret: true,
    }),
    apiUrl: setting({ option: "apiUrl", value: options.apiUrl, env: "DAYTONA_API_URL", parse: string }),
    target: setting({ option: "target", value: options.target, env: "DAYTONA_TARGET", parse: string }),
    snapshot: options.snapshot,
    image: options.image,
    requestTimeoutMs:
      setting({ option: "requestTimeoutMs", value: options.requestTimeoutMs, parse: positiveNumber }) ??
      60_000,
    startTimeoutMs:
      setting({ option: "startTimeoutMs", value: options.startTimeoutMs, parse: positiveNumber }) ?? 120_000,
    expiredDeleteAfterMinutes: options.expiredDeleteAfterMinutes ?? 0,
    autoStopMinutes: options.autoStopMinutes,
    autoArchiveMinutes: options.autoArchiveMinutes,
    autoDeleteMinutes: options.autoDeleteMinutes,
  };
}
