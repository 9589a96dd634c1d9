import {
  loadSetting,
  optionRules,
  type ProviderOptionRules,
  SandboxError,
  type SettingSource,
  settingParsers,
  validateProviderOptions,
} from "@sbox/core/spec";
import { VERCEL_PROVIDER_NAME } from "./vercel-names.js";

/** Options of {@link vercel}. Every field is optional; without any, Vercel's environment variables are used. */
export interface VercelProviderOptions {
  /**
   * A Vercel access token (default `VERCEL_TOKEN`); needs `teamId` and `projectId`. Without one,
   * `oidcToken` is used. Never put into an error message.
   */
  token?: string | undefined;
  /** The team sandboxes belong to (default `VERCEL_TEAM_ID`), with `token`. */
  teamId?: string | undefined;
  /** The project sandboxes belong to (default `VERCEL_PROJECT_ID`), with `token`. */
  projectId?: string | undefined;
  /**
   * A Vercel OIDC token (default `VERCEL_OIDC_TOKEN`, what `vercel env pull` writes): it names its team and
   * project itself.
   */
  oidcToken?: string | undefined;
  /** Runtime of sandboxes created without `spec.template` (default `node24`); `spec.template` names another. */
  runtime?: string | undefined;
  /**
   * Lifetime of a sandbox created without `spec.ttlMs`, in ms (default 300 000, Vercel's own). Vercel stops
   * the sandbox's session when it runs out; `sandbox.setTimeout()` extends it.
   */
  timeoutMs?: number | undefined;
  /** Upper bound of each API request in ms until its answer starts (default 60 000). */
  requestTimeoutMs?: number | undefined;
  /**
   * Whether sandboxes keep their files across stop (Vercel's `persistent`, default `true`): a stopped
   * persistent sandbox resumes from its files on the next call.
   */
  persistent?: boolean | undefined;
  /**
   * The API base instead of `https://vercel.com/api` (default `SBOX_VERCEL_API_URL`): for the emulator of
   * `@sbox/emulators/vercel`. The SDK has no such setting; the provider rewrites its requests' origin.
   */
  apiUrl?: string | undefined;
}

/** Credentials as the SDK takes them. */
export interface VercelCredentials {
  readonly token: string;
  readonly teamId: string;
  readonly projectId: string;
}

/** Options after defaults. */
export interface ResolvedVercelOptions {
  /** `undefined` until a call needs them: a missing credential is reported then, not at construction. */
  readonly credentials: VercelCredentials | undefined;
  readonly credentialProblem: string | undefined;
  readonly runtime: string;
  readonly timeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly persistent: boolean;
  readonly apiUrl: string | undefined;
}

/** Vercel's default sandbox lifetime (5 minutes). */
export const DEFAULT_TIMEOUT_MS = 300_000;

/** The runtime of sandboxes created without a template. */
export const DEFAULT_RUNTIME = "node24";

/** The environment variables credentials are read from. */
export const VERCEL_ENV = {
  token: "VERCEL_TOKEN",
  teamId: "VERCEL_TEAM_ID",
  projectId: "VERCEL_PROJECT_ID",
  oidcToken: "VERCEL_OIDC_TOKEN",
  apiUrl: "SBOX_VERCEL_API_URL",
} as const;

const milliseconds = () => optionRules.positiveNumber("a positive number of milliseconds");

const VERCEL_OPTION_RULES: ProviderOptionRules = {
  token: optionRules.secret(),
  teamId: optionRules.nonEmptyString(),
  projectId: optionRules.nonEmptyString(),
  oidcToken: optionRules.secret(),
  runtime: optionRules.nonEmptyString(),
  timeoutMs: milliseconds(),
  requestTimeoutMs: milliseconds(),
  persistent: optionRules.boolean(),
  apiUrl: optionRules.nonEmptyString(),
};

/** The team and project an OIDC token names (`owner_id`, `project_id`), read as the SDK reads them. */
function oidcScope(token: string): { teamId: string; projectId: string } | undefined {
  const payload = token.split(".")[1];
  if (token.split(".").length !== 3 || payload === undefined) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as Record<string, unknown>;
    if (typeof claims.owner_id === "string" && typeof claims.project_id === "string") {
      return { teamId: claims.owner_id, projectId: claims.project_id };
    }
  } catch {
    // not a JWT: reported below
  }
  return undefined;
}

/**
 * Checks the options (unknown keys and bad values are `Validation` errors naming the key, never a
 * credential) and fills in defaults: each option, else its environment variable, else Vercel's default.
 */
export function resolveVercelOptions(options: VercelProviderOptions): ResolvedVercelOptions {
  validateProviderOptions(VERCEL_PROVIDER_NAME, options, VERCEL_OPTION_RULES);
  const setting = <T>(source: SettingSource<T>): T | undefined => loadSetting(VERCEL_PROVIDER_NAME, source);
  const { positiveNumber, string } = settingParsers;
  const token = setting({
    option: "token",
    value: options.token,
    env: VERCEL_ENV.token,
    parse: string,
    secret: true,
  });
  const teamId = setting({ option: "teamId", value: options.teamId, env: VERCEL_ENV.teamId, parse: string });
  const projectId = setting({
    option: "projectId",
    value: options.projectId,
    env: VERCEL_ENV.projectId,
    parse: string,
  });
  const oidcToken = setting({
    option: "oidcToken",
    value: options.oidcToken,
    env: VERCEL_ENV.oidcToken,
    parse: string,
    secret: true,
  });
  let credentials: VercelCredentials | undefined;
  let credentialProblem: string | undefined;
  if (token !== undefined) {
    if (teamId === undefined || projectId === undefined) {
      credentialProblem = `an access token needs teamId and projectId (options, or ${VERCEL_ENV.teamId} and ${VERCEL_ENV.projectId})`;
    } else credentials = { token, teamId, projectId };
  } else if (oidcToken !== undefined) {
    const scope = oidcScope(oidcToken);
    if (!scope)
      credentialProblem = "the OIDC token is not a Vercel OIDC token (a JWT naming owner_id and project_id)";
    else credentials = { token: oidcToken, ...scope };
  } else {
    credentialProblem = `no credentials: pass token with teamId and projectId (or set ${VERCEL_ENV.token}, ${VERCEL_ENV.teamId}, ${VERCEL_ENV.projectId}), or an OIDC token (${VERCEL_ENV.oidcToken})`;
  }
  return {
    credentials,
    credentialProblem,
    runtime: options.runtime ?? DEFAULT_RUNTIME,
    timeoutMs:
      setting({ option: "timeoutMs", value: options.timeoutMs, parse: positiveNumber }) ?? DEFAULT_TIMEOUT_MS,
    requestTimeoutMs:
      setting({ option: "requestTimeoutMs", value: options.requestTimeoutMs, parse: positiveNumber }) ??
      60_000,
    persistent: options.persistent ?? true,
    apiUrl: setting({ option: "apiUrl", value: options.apiUrl, env: VERCEL_ENV.apiUrl, parse: string }),
  };
}

/** The credentials, or the `Unauthorized` error saying what is missing. */
export function credentialsOf(options: ResolvedVercelOptions): VercelCredentials {
  if (options.credentials) return options.credentials;
  throw new SandboxError("Unauthorized", `vercel: ${options.credentialProblem ?? "no credentials"}`, {
    provider: VERCEL_PROVIDER_NAME,
    retryable: false,
  });
}
