import {
  codeForHttpStatus,
  isRetryableHttpStatus,
  type ProviderErrorContext,
  SandboxError,
  type SandboxErrorCode,
} from "@sbox/core/spec";
import { DAYTONA_PROVIDER_NAME } from "./daytona-names.js";

interface DaytonaErrorShape {
  name?: unknown;
  message?: unknown;
  statusCode?: unknown;
}

/** The SDK's error classes that carry no HTTP status, by class name. */
const CODE_BY_CLASS: Readonly<Record<string, SandboxErrorCode>> = {
  DaytonaConnectionTimeoutError: "Timeout",
  DaytonaTimeoutError: "Timeout",
  DaytonaProcessExecutionTimeoutError: "Timeout",
  DaytonaAuthenticationError: "Unauthorized",
  DaytonaInvalidArgumentError: "Validation",
  DaytonaValidationError: "Validation",
  DaytonaNotFoundError: "NotFound",
  DaytonaFileNotFoundError: "NotFound",
};

/** Whether an SDK error means "no such sandbox" (or file, session...): a 404. */
export function isDaytonaNotFound(error: unknown): boolean {
  const e = typeof error === "object" && error !== null ? (error as DaytonaErrorShape) : {};
  return e.statusCode === 404 || e.name === "DaytonaNotFoundError";
}

/**
 * Maps what `@daytonaio/sdk` throws (`DaytonaError` subclasses with the HTTP `statusCode` of the answer) onto
 * the taxonomy: by status first (404 NotFound, 401/403 Unauthorized, 409 Conflict, 429 QuotaExceeded...),
 * then by class for the errors without a status (connection timeouts are `Timeout`, retryable; a refused
 * connection is `Provider`, retryable). Anything else is left to the core's default mapping.
 */
export function mapDaytonaError(error: unknown, context: ProviderErrorContext): SandboxError | undefined {
  if (SandboxError.isInstance(error)) return undefined;
  if (typeof error !== "object" || error === null) return undefined;
  const e = error as DaytonaErrorShape;
  const name = typeof e.name === "string" ? e.name : "";
  if (!name.startsWith("Daytona")) return undefined;
  const message = `daytona: ${context.operation} failed: ${typeof e.message === "string" ? e.message : name}`;
  const status = typeof e.statusCode === "number" ? e.statusCode : undefined;
  if (status !== undefined) {
    return new SandboxError(codeForHttpStatus(status), message, {
      provider: DAYTONA_PROVIDER_NAME,
      status,
      retryable: isRetryableHttpStatus(status),
      cause: error,
    });
  }
  const code = CODE_BY_CLASS[name];
  if (code) {
    return new SandboxError(code, message, {
      provider: DAYTONA_PROVIDER_NAME,
      retryable: code === "Timeout",
      cause: error,
    });
  }
  if (name === "DaytonaConnectionError") {
    return new SandboxError("Provider", message, {
      provider: DAYTONA_PROVIDER_NAME,
      retryable: true,
      cause: error,
    });
  }
  return undefined;
}
