import {
  invalidSetting,
  loadSetting,
  optionRules,
  type ProviderOptionRules,
  SandboxError,
  type SettingParser,
  type SettingSource,
  settingParsers,
  validateProviderOptions,
} from "@sbox/core/spec";
import { FLY_PROVIDER_NAME } from "./fly-names.js";

/** The public Machines API endpoint. */
export const DEFAULT_FLY_API_BASE_URL = "https://api.machines.dev";
/**
 * The longest one exec call may run, in seconds: Fly's Machines API answers 408 past about 30 seconds
 * whatever `timeout` asks for. Commands that run longer go through the core's detached-command
 * emulation, whose execs are short.
 */
export const FLY_EXEC_LIMIT_SECONDS = 30;

/** The image machines are created from unless the spec's `template` or the `image` option names another. */
export const DEFAULT_FLY_IMAGE = "registry-1.docker.io/library/alpine:3.20";

/** Retry policy for calls that are safe to repeat. */
export interface FlyRetryOptions {
  /** Further attempts after the first (default 4). */
  retries?: number | undefined;
  /** First backoff delay in milliseconds (default 250); doubles per attempt, with full jitter. */
  baseDelayMs?: number | undefined;
  /** Longest delay between attempts in milliseconds (default 8 000); also caps a `Retry-After`. */
  maxDelayMs?: number | undefined;
}

/** {@link FlyRetryOptions} with defaults applied. */
export interface ResolvedFlyRetry {
  readonly retries: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

/** Where an exposed port is reached: given the app, the machine and the port, return the URL. */
export type FlyPreviewUrl = (target: { app: string; machineId: string; port: number }) => string;

/** Options of {@link fly}. */
export interface FlyProviderOptions {
  /** Fly API token (default: the `FLY_API_TOKEN` environment variable). Never appears in an error. */
  apiToken?: string | undefined;
  /** The Fly App the machines belong to (default: the `FLY_APP` environment variable). */
  appName?: string | undefined;
  /** Region for new machines unless the spec names one (default: Fly picks one near the API caller). */
  region?: string | undefined;
  /** Image for new machines unless the spec's `template` names one (default {@link DEFAULT_FLY_IMAGE}). */
  image?: string | undefined;
  /** Machines API base URL (default {@link DEFAULT_FLY_API_BASE_URL}; `http://_api.internal:4280` inside Fly). */
  apiBaseUrl?: string | undefined;
  /** The `fetch` to use (default: the global one). */
  fetch?: typeof fetch | undefined;
  /** How long `create()` and `resume()` wait for a machine to reach `started` (default 120 000 ms). */
  startTimeoutMs?: number | undefined;
  /** How long `stop()` and `pause()` wait for `stopped` / `suspended` (default 60 000 ms). */
  stopTimeoutMs?: number | undefined;
  /** Time limit sent with one exec call, in seconds (default and most {@link FLY_EXEC_LIMIT_SECONDS}, Fly's own limit). */
  execTimeoutSeconds?: number | undefined;
  /**
   * Deadline of one call of the Machines API in ms (default 30 000): Fly's answer must begin within it and
   * its body must not pause longer. Calls that wait on purpose (the wait route, an exec) get their own
   * time on top; while an exec runs, the machine is checked with this deadline. Past it: `Timeout`.
   */
  requestTimeoutMs?: number | undefined;
  /** Retries of 429, 5xx and network failures (see the README for which calls are retried). */
  retry?: FlyRetryOptions | undefined;
  /** Preview URL of an exposed port (default `https://{app}.fly.dev:{port}`). */
  previewUrl?: FlyPreviewUrl | undefined;
  /** `config.guest.cpu_kind` of new machines (default `"shared"`). */
  cpuKind?: string | undefined;
}

/** Options with defaults applied; the token and app are checked when a call needs them. */
export interface ResolvedFlyOptions {
  readonly apiToken: string | undefined;
  readonly appName: string | undefined;
  readonly region: string | undefined;
  readonly image: string;
  readonly apiBaseUrl: string;
  readonly fetch: typeof fetch;
  readonly startTimeoutMs: number;
  readonly stopTimeoutMs: number;
  readonly execTimeoutSeconds: number;
  readonly requestTimeoutMs: number;
  readonly retry: ResolvedFlyRetry;
  readonly previewUrl: FlyPreviewUrl;
  readonly cpuKind: string;
}

const fly = (source: SettingSource<number>, fallback: number): number =>
  loadSetting(FLY_PROVIDER_NAME, source, fallback);

/** At most Fly's own exec limit: its exec answers 408 past that whatever it is asked. */
const execTimeoutSeconds: SettingParser<number> = (raw, from) => {
  const seconds = settingParsers.positiveNumber(raw, from);
  return seconds <= FLY_EXEC_LIMIT_SECONDS
    ? seconds
    : invalidSetting(
        `be at most ${FLY_EXEC_LIMIT_SECONDS} (Fly's exec answers 408 past that whatever it is asked; longer commands run detached through the core's emulation anyway)`,
      );
};

/** Every option of {@link fly} and what it takes: anything else is refused, not ignored. */
const FLY_OPTION_RULES: ProviderOptionRules = {
  apiToken: optionRules.secret(),
  appName: optionRules.nonEmptyString(),
  region: optionRules.nonEmptyString(),
  image: optionRules.nonEmptyString(),
  apiBaseUrl: optionRules.nonEmptyString(),
  fetch: optionRules.function(),
  startTimeoutMs: optionRules.positiveNumber("a positive number of milliseconds"),
  stopTimeoutMs: optionRules.positiveNumber("a positive number of milliseconds"),
  execTimeoutSeconds: optionRules.positiveNumber("a positive number of seconds"),
  retry: optionRules.object({
    retries: optionRules.custom("a whole number of 0 or more", (value) =>
      Number.isInteger(value) && (value as number) >= 0
        ? undefined
        : `must be a whole number of 0 or more, got ${String(value)}`,
    ),
    baseDelayMs: optionRules.positiveNumber("a positive number of milliseconds"),
    maxDelayMs: optionRules.positiveNumber("a positive number of milliseconds"),
  }),
  previewUrl: optionRules.function(),
  cpuKind: optionRules.nonEmptyString(),
  requestTimeoutMs: optionRules.positiveNumber("a positive number of milliseconds"),
};

/**
 * Applies defaults and checks the shape of the options (each option, else its environment variable, else
 * the default). Missing credentials are not an error here, so that the declaration can be read
 * (`sbox caps`) without them; every call checks them first.
 */
export function resolveFlyOptions(options: FlyProviderOptions = {}): ResolvedFlyOptions {
  if (typeof options !== "object" || options === null) {
    throw new SandboxError("Validation", "fly(): options must be an object", { provider: FLY_PROVIDER_NAME });
  }
  validateProviderOptions(FLY_PROVIDER_NAME, options, FLY_OPTION_RULES);
  const fetchImpl = options.fetch ?? globalThis.fetch;
  if (typeof fetchImpl !== "function") {
    throw new SandboxError(
      "Validation",
      "fly(): no fetch implementation: pass options.fetch or run on Node 20 or later",
      { provider: FLY_PROVIDER_NAME },
    );
  }
  const retry = options.retry ?? {};
  const { positiveNumber, nonNegativeInteger } = settingParsers;
  return {
    apiToken: loadSetting(FLY_PROVIDER_NAME, {
      option: "apiToken",
      value: options.apiToken,
      env: "FLY_API_TOKEN",
      // An empty token counts as none: requireCredentials names FLY_API_TOKEN when a call needs it.
      parse: (raw) => (typeof raw === "string" ? raw : invalidSetting("be a string")),
      secret: true,
    }),
    appName: loadSetting(FLY_PROVIDER_NAME, {
      option: "appName",
      value: options.appName,
      env: "FLY_APP",
      parse: settingParsers.matching(
        /^[a-z0-9][a-z0-9-]*$/,
        "be a Fly app name (lowercase letters, digits, dashes)",
      ),
    }),
    region: options.region,
    image: options.image ?? DEFAULT_FLY_IMAGE,
    apiBaseUrl: loadSetting(
      FLY_PROVIDER_NAME,
      {
        option: "apiBaseUrl",
        value: options.apiBaseUrl,
        env: "FLY_API_HOSTNAME",
        parse: settingParsers.url(["https:", "http:"]),
      },
      DEFAULT_FLY_API_BASE_URL,
    ),
    fetch: fetchImpl,
    startTimeoutMs: fly(
      { option: "startTimeoutMs", value: options.startTimeoutMs, parse: positiveNumber },
      120_000,
    ),
    stopTimeoutMs: fly(
      { option: "stopTimeoutMs", value: options.stopTimeoutMs, parse: positiveNumber },
      60_000,
    ),
    execTimeoutSeconds: Math.ceil(
      fly(
        { option: "execTimeoutSeconds", value: options.execTimeoutSeconds, parse: execTimeoutSeconds },
        FLY_EXEC_LIMIT_SECONDS,
      ),
    ),
    requestTimeoutMs: fly(
      { option: "requestTimeoutMs", value: options.requestTimeoutMs, parse: positiveNumber },
      30_000,
    ),
    retry: {
      retries: fly({ option: "retry.retries", value: retry.retries, parse: nonNegativeInteger }, 4),
      baseDelayMs: fly({ option: "retry.baseDelayMs", value: retry.baseDelayMs, parse: positiveNumber }, 250),
      maxDelayMs: fly({ option: "retry.maxDelayMs", value: retry.maxDelayMs, parse: positiveNumber }, 8_000),
    },
    previewUrl:
      options.previewUrl ?? (({ app, port }) => `https://${app}.fly.dev${port === 443 ? "" : `:${port}`}`),
    cpuKind: options.cpuKind ?? "shared",
  };
}

/** The token and app a call needs, or a clear error naming the environment variables. */
export function requireCredentials(options: ResolvedFlyOptions): { token: string; app: string } {
  if (options.apiToken === undefined || options.apiToken === "") {
    throw new SandboxError(
      "Unauthorized",
      "no Fly API token: set FLY_API_TOKEN (for example `export FLY_API_TOKEN=$(fly auth token)`) or pass fly({ apiToken })",
    );
  }
  if (options.appName === undefined) {
    throw new SandboxError(
      "Validation",
      "no Fly app: set FLY_APP to the name of an existing Fly App, or pass fly({ appName })",
    );
  }
  return { token: options.apiToken, app: options.appName };
}
