import { abortErrorOf, createProviderFetch, SandboxError } from "@sbox/core/spec";
import { type FlyFailureContext, flyHttpError, flyNetworkError } from "./fly-errors.js";
import { FLY_PROVIDER_NAME } from "./fly-names.js";
import { type ResolvedFlyOptions, requireCredentials } from "./fly-options.js";
import { retryDelayMs, sleepUnlessAborted } from "./fly-retry.js";
import { authorizationHeader, tokenSecrets } from "./fly-token.js";

/**
 * Which failures a call may be repeated after:
 * - `"idempotent"` (GET, DELETE, wait): 429, 5xx and network failures;
 * - `"refused-only"` (create, exec, stop, start, suspend): only 429, which Fly answers before doing
 *   anything, so a repeat cannot run a command twice or make a second machine.
 */
export type FlyRetryClass = "idempotent" | "refused-only";

/** One call of the Machines API. */
export interface FlyCall {
  readonly method: "GET" | "POST" | "DELETE";
  /** Path below the app, already encoded: `""` for `/v1/apps/{app}/machines`, `"/{id}/exec"`... */
  readonly path: string;
  readonly query?: readonly (readonly [string, string])[] | undefined;
  /** JSON body. */
  readonly body?: unknown;
  /** Extra headers (the lease nonce). */
  readonly headers?: Readonly<Record<string, string>> | undefined;
  readonly signal: AbortSignal;
  /** What is being done, for error messages: `"exec on machine 3d8d413b29d089"`. */
  readonly operation: string;
  readonly retry: FlyRetryClass;
  /**
   * How long Fly may legitimately take to answer (a wait route's own timeout, an exec's command time), in
   * ms; the call's deadline is this plus `requestTimeoutMs`. Default 0.
   */
  readonly waitsMs?: number | undefined;
}

/** The HTTP layer of the provider: auth, JSON, the error taxonomy, deadlines and retries. */
export interface FlyHttp {
  /** The app the calls go to. */
  readonly app: () => string;
  /** The deadline of one call that is not expected to wait (ms). */
  readonly requestTimeoutMs: number;
  /** Sends `call` and returns the parsed JSON body (or `undefined` for an empty one). */
  request<T>(call: FlyCall): Promise<T>;
}

function isRetryableFailure(error: SandboxError, retry: FlyRetryClass): boolean {
  if (error.status === 429) return true;
  if (retry !== "idempotent") return false;
  if (error.status === undefined) return error.retryable; // network failure
  // 408 is left to the caller: on the wait route it means "not yet", which the wait loop handles.
  return error.status >= 500;
}

/**
 * Builds the HTTP layer over `options.fetch`, through core's provider fetch: the token is never sent to
 * another origin on a redirect, and a Fly that stays silent past a call's deadline rejects it with
 * `Timeout` (not retried here: the caller's own retry policy decides).
 */
export function createFlyHttp(options: ResolvedFlyOptions): FlyHttp {
  const app = (): string => requireCredentials(options).app;
  const send = createProviderFetch({
    provider: FLY_PROVIDER_NAME,
    fetch: options.fetch,
    requestTimeoutMs: options.requestTimeoutMs,
    // A token pasted with its scheme or as several comma-separated tokens: each bare part is a secret.
    secrets: () => tokenSecrets(options.apiToken ?? ""),
  });

  const once = async (
    call: FlyCall,
    token: string,
    appName: string,
    context: FlyFailureContext,
  ): Promise<{ value: unknown } | { error: SandboxError; retryAfter: string | null }> => {
    const url = new URL(`${options.apiBaseUrl}/v1/apps/${encodeURIComponent(appName)}/machines${call.path}`);
    for (const [key, value] of call.query ?? []) url.searchParams.append(key, value);
    const headers: Record<string, string> = {
      ...(call.headers ?? {}),
      Authorization: authorizationHeader(token),
      Accept: "application/json",
    };
    const init: RequestInit = { method: call.method, headers, signal: call.signal };
    if (call.body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(call.body);
    }
    let response: Response;
    let text: string;
    try {
      response = await send(url, init, {
        timeoutMs: (call.waitsMs ?? 0) + options.requestTimeoutMs,
        retryable: call.retry === "idempotent",
        what: call.operation,
      });
      text = await response.text();
    } catch (error) {
      if (call.signal.aborted) throw abortErrorOf(call.signal, call.operation);
      // A deadline passed or a redirect refused: not a network failure worth repeating.
      if (SandboxError.isInstance(error)) throw error;
      return { error: flyNetworkError(error, options.apiBaseUrl, context), retryAfter: null };
    }
    if (!response.ok) {
      return {
        error: flyHttpError(response.status, text, context),
        retryAfter: response.headers.get("retry-after"),
      };
    }
    if (text.trim() === "") return { value: undefined };
    try {
      return { value: JSON.parse(text) as unknown };
    } catch (error) {
      throw new SandboxError(
        "Provider",
        `${call.operation}: the Fly Machines API answered ${response.status} with a body that is not JSON`,
        { status: response.status, cause: error },
      );
    }
  };

  return {
    app,
    requestTimeoutMs: options.requestTimeoutMs,
    async request<T>(call: FlyCall): Promise<T> {
      const { token, app: appName } = requireCredentials(options);
      const context: FlyFailureContext = { operation: call.operation, app: appName };
      for (let attempt = 0; ; attempt++) {
        if (call.signal.aborted) throw abortErrorOf(call.signal, call.operation);
        const outcome = await once(call, token, appName, context);
        if ("value" in outcome) return outcome.value as T;
        if (attempt >= options.retry.retries || !isRetryableFailure(outcome.error, call.retry)) {
          throw outcome.error;
        }
        await sleepUnlessAborted(
          retryDelayMs(attempt + 1, options.retry, outcome.retryAfter),
          call.signal,
          call.operation,
        );
      }
    },
  };
}
