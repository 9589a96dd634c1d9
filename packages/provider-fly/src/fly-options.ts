import { SandboxError } from "@sbox/core/spec";
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
  readonly retry: ResolvedFlyRetry;
  readonly previewUrl: FlyPreviewUrl;
  readonly cpuKind: string;
}

function envVar(name: string): string | undefined {
  // Read through globalThis so the provider also loads where no `process` exists (edge runtimes).
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const value = env?.[name];
  return value === undefined || value === "" ? undefined : value;
}

function invalid(message: string): SandboxError {
  return new SandboxError("Validation", message, { provider: FLY_PROVIDER_NAME, retryable: false });
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw invalid(`fly(): ${name} must be a positive number, got ${String(value)}`);
  }
  return value;
}

function nonNegativeInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) {
    throw invalid(`fly(): ${name} must be a non-negative integer, got ${String(value)}`);
  }
  return value;
}

/**
 * Applies defaults and checks the shape of the options. Missing credentials are not an error here, so
 * that the declaration can be read (`sbox caps`) without them; every call checks them first.
 */
export function resolveFlyOptions(options: FlyProviderOptions = {}): ResolvedFlyOptions {
  if (typeof options !== "object" || options === null) throw invalid("fly(): options must be an object");
  const base = options.apiBaseUrl ?? envVar("FLY_API_HOSTNAME") ?? DEFAULT_FLY_API_BASE_URL;
  let parsed: URL;
  try {
    parsed = new URL(base);
  } catch {
    throw invalid(`fly(): apiBaseUrl is not a URL: ${JSON.stringify(base)}`);
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw invalid(`fly(): apiBaseUrl must be http(s), got ${parsed.protocol}`);
  }
  const fetchImpl = options.fetch ?? globalThis.fetch;
  if (typeof fetchImpl !== "function") {
    throw invalid("fly(): no fetch implementation: pass options.fetch or run on Node 20 or later");
  }
  const retry = options.retry ?? {};
  const resolved: ResolvedFlyOptions = {
    apiToken: options.apiToken ?? envVar("FLY_API_TOKEN"),
    appName: options.appName ?? envVar("FLY_APP"),
    region: options.region,
    image: options.image ?? DEFAULT_FLY_IMAGE,
    apiBaseUrl: base.replace(/\/+$/, ""),
    fetch: fetchImpl,
    startTimeoutMs: positive("startTimeoutMs", options.startTimeoutMs, 120_000),
    stopTimeoutMs: positive("stopTimeoutMs", options.stopTimeoutMs, 60_000),
    execTimeoutSeconds: Math.ceil(
      positive("execTimeoutSeconds", options.execTimeoutSeconds, FLY_EXEC_LIMIT_SECONDS),
    ),
    retry: {
      retries: nonNegativeInteger("retry.retries", retry.retries, 4),
      baseDelayMs: positive("retry.baseDelayMs", retry.baseDelayMs, 250),
      maxDelayMs: positive("retry.maxDelayMs", retry.maxDelayMs, 8_000),
    },
    previewUrl:
      options.previewUrl ?? (({ app, port }) => `https://${app}.fly.dev${port === 443 ? "" : `:${port}`}`),
    cpuKind: options.cpuKind ?? "shared",
  };
  if (resolved.execTimeoutSeconds > FLY_EXEC_LIMIT_SECONDS) {
    throw invalid(
      `fly(): execTimeoutSeconds must be at most ${FLY_EXEC_LIMIT_SECONDS} (Fly's exec answers 408 past that whatever it is asked); longer commands run detached through the core's emulation anyway`,
    );
  }
  if (resolved.appName !== undefined && !/^[a-z0-9][a-z0-9-]*$/.test(resolved.appName)) {
    throw invalid(
      `fly(): appName must be a Fly app name (lowercase letters, digits, dashes), got ${JSON.stringify(resolved.appName)}`,
    );
  }
  return resolved;
}

/** The token and app a call needs, or a clear error naming the environment variables. */
export function requireCredentials(options: ResolvedFlyOptions): { token: string; app: string } {
  if (options.apiToken === undefined || options.apiToken === "") {
    throw new SandboxError(
      "Unauthorized",
      "no Fly API token: set FLY_API_TOKEN (for example `export FLY_API_TOKEN=$(fly auth token)`) or pass fly({ apiToken })",
      { provider: FLY_PROVIDER_NAME, retryable: false },
    );
  }
  if (options.appName === undefined) {
    throw new SandboxError(
      "Validation",
      "no Fly app: set FLY_APP to the name of an existing Fly App, or pass fly({ appName })",
      { provider: FLY_PROVIDER_NAME, retryable: false },
    );
  }
  return { token: options.apiToken, app: options.appName };
}
