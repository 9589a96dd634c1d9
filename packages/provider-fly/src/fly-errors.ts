import { codeForHttpStatus, isRetryableHttpStatus, SandboxError } from "@sbox/core/spec";
import type { FlyErrorBody } from "./fly-api-types.js";

/** Longest piece of a response body quoted in an error message. */
const MAX_DETAIL_CHARS = 500;

/** The `error` field of a Fly error body, or the body text itself, shortened. */
export function errorDetailOf(body: string): string {
  let detail = body.trim();
  try {
    const parsed = JSON.parse(detail) as FlyErrorBody | null;
    if (parsed && typeof parsed === "object" && typeof parsed.error === "string") detail = parsed.error;
  } catch {
    // Not JSON (a proxy's HTML page, plain text): quote it as it is.
  }
  return detail.length > MAX_DETAIL_CHARS ? `${detail.slice(0, MAX_DETAIL_CHARS)}…` : detail;
}

/** What failed, for the message: `"exec on machine 3d8d413b29d089"`. */
export interface FlyFailureContext {
  readonly operation: string;
  readonly app: string;
}

/**
 * The `SandboxError` of an HTTP failure of the Machines API: the status maps to the taxonomy
 * (`codeForHttpStatus`, and 412 to `InvalidState`), 408/429/5xx are retryable, and 401/403 say which credential to check. The
 * token is never part of the message: it only travels in the Authorization header, and it is scrubbed
 * from the quoted response body in case a server echoes it.
 */
export function flyHttpError(status: number, body: string, context: FlyFailureContext): SandboxError {
  const detail = errorDetailOf(body);
  // Fly answers 412 ("failed_precondition") when the machine's state forbids the call (exec on a
  // stopped machine, destroy of a running one without force): that is a state problem, not a conflict.
  const code = status === 412 ? "InvalidState" : codeForHttpStatus(status);
  let hint = "";
  if (status === 401) {
    hint =
      " (the API token was rejected: check FLY_API_TOKEN or the apiToken option; `fly auth token` prints a valid one)";
  } else if (status === 403) {
    hint = ` (the API token has no access to app ${context.app}: check FLY_API_TOKEN and FLY_APP)`;
  } else if (status === 429) {
    hint = " (rate limited by Fly)";
  }
  return new SandboxError(
    code,
    `${context.operation}: the Fly Machines API answered ${status}${detail ? `: ${detail}` : ""}${hint}`,
    { status, retryable: isRetryableHttpStatus(status) },
  );
}

/** The `SandboxError` of a request that never got an HTTP answer (DNS, refused connection, reset). */
export function flyNetworkError(error: unknown, baseUrl: string, context: FlyFailureContext): SandboxError {
  const cause = error as { message?: unknown; cause?: { code?: unknown; message?: unknown } };
  const reason =
    typeof cause.cause?.code === "string"
      ? cause.cause.code
      : typeof cause.cause?.message === "string"
        ? cause.cause.message
        : typeof cause.message === "string"
          ? cause.message
          : String(error);
  return new SandboxError(
    "Provider",
    `${context.operation}: could not reach the Fly Machines API at ${baseUrl}: ${reason}`,
    { retryable: true, cause: error },
  );
}

/** True for a `SandboxError` that carries HTTP status `status`. */
export function hasStatus(error: unknown, status: number): boolean {
  return SandboxError.isInstance(error) && error.status === status;
}
