import type { SandboxErrorCode } from "./error-codes.js";
import { SandboxError } from "./sandbox-error.js";

/** Context used when wrapping an unknown thrown value. */
export interface WrapErrorContext {
  /** The provider the call went to. */
  provider?: string | undefined;
  /** What was being done, prefixed to the message: "exec", "files.read /a". */
  operation?: string | undefined;
  /** Literal secrets to scrub from the message. */
  secrets?: readonly (string | undefined)[] | undefined;
  /** The code to use when nothing better is known (default `Provider`). */
  fallbackCode?: SandboxErrorCode | undefined;
}

const NODE_ERRNO_CODES: Record<string, SandboxErrorCode> = {
  ENOENT: "NotFound",
  EACCES: "Unauthorized",
  EPERM: "Unauthorized",
  EEXIST: "Conflict",
  ENOTEMPTY: "Conflict",
  ETIMEDOUT: "Timeout",
  ECONNREFUSED: "Provider",
  ECONNRESET: "Provider",
  EPIPE: "Provider",
  ENOTDIR: "Validation",
  EISDIR: "Validation",
  EINVAL: "Validation",
};

const HTTP_STATUS_CODES: Record<number, SandboxErrorCode> = {
  400: "Validation",
  401: "Unauthorized",
  403: "Unauthorized",
  404: "NotFound",
  408: "Timeout",
  409: "Conflict",
  412: "Conflict",
  422: "Validation",
  429: "QuotaExceeded",
};

/** Maps an HTTP status to a taxonomy code: 4xx by table, 5xx and unknown to `Provider`. */
export function codeForHttpStatus(status: number): SandboxErrorCode {
  return HTTP_STATUS_CODES[status] ?? "Provider";
}

/** Whether a call that failed with this HTTP status may succeed when retried (429, 408, 5xx). */
export function isRetryableHttpStatus(status: number): boolean {
  return status === 429 || status === 408 || status >= 500;
}

/**
 * Turns anything thrown into a `SandboxError`: a `SandboxError` passes through unchanged; an `AbortError`
 * becomes `Aborted`; Node errno codes and HTTP statuses map to the taxonomy; the rest becomes `Provider`.
 * The original value is kept as `cause`.
 */
export function toSandboxError(error: unknown, context: WrapErrorContext = {}): SandboxError {
  if (SandboxError.isInstance(error)) return error;
  const prefix = context.operation ? `${context.operation}: ` : "";
  const base = { provider: context.provider, cause: error, secrets: context.secrets };
  if (error instanceof Error || (typeof error === "object" && error !== null)) {
    const e = error as {
      name?: unknown;
      code?: unknown;
      status?: unknown;
      statusCode?: unknown;
      message?: unknown;
    };
    const message = typeof e.message === "string" ? e.message : String(error);
    if (e.name === "AbortError") return new SandboxError("Aborted", `${prefix}${message}`, base);
    if (e.name === "TimeoutError") return new SandboxError("Timeout", `${prefix}${message}`, base);
    const status =
      typeof e.status === "number" ? e.status : typeof e.statusCode === "number" ? e.statusCode : undefined;
    if (status !== undefined && status >= 400) {
      return new SandboxError(codeForHttpStatus(status), `${prefix}${message}`, {
        ...base,
        status,
        retryable: isRetryableHttpStatus(status),
      });
    }
    if (typeof e.code === "string" && NODE_ERRNO_CODES[e.code]) {
      const code = NODE_ERRNO_CODES[e.code]!;
      return new SandboxError(code, `${prefix}${message}`, {
        ...base,
        retryable:
          e.code === "ECONNREFUSED" ||
          e.code === "ECONNRESET" ||
          e.code === "ETIMEDOUT" ||
          e.code === "EPIPE",
      });
    }
    return new SandboxError(context.fallbackCode ?? "Provider", `${prefix}${message}`, base);
  }
  return new SandboxError(context.fallbackCode ?? "Provider", `${prefix}${String(error)}`, base);
}
