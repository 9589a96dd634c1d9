import {
  codeForHttpStatus,
  isRetryableHttpStatus,
  type ProviderErrorContext,
  SandboxError,
  type SandboxErrorCode,
} from "@sbox/core/spec";
import { VERCEL_PROVIDER_NAME } from "./vercel-names.js";
import { VercelDeadlineError } from "./vercel-sdk.js";

interface ApiErrorShape {
  name?: unknown;
  message?: unknown;
  response?: { status?: unknown };
  json?: { error?: { code?: unknown; message?: unknown } };
  code?: unknown;
}

/** The API's error codes that say more than the status. */
const API_CODES: Readonly<Record<string, SandboxErrorCode>> = {
  sandbox_stopped: "InvalidState",
  sandbox_stopping: "InvalidState",
  sandbox_snapshotting: "InvalidState",
  snapshot_not_found: "NotFound",
  sandbox_already_exists: "Conflict",
};

/**
 * Maps what the SDK throws: its `APIError` (an HTTP answer: the status and the API's `error.code` decide
 * the code), its `StreamError` (a log stream ended by the service: the sandbox stopped), the provider's
 * deadline, and anything else as the core maps it.
 */
export function mapVercelError(error: unknown, context: ProviderErrorContext): SandboxError | undefined {
  if (error instanceof VercelDeadlineError) return error.error;
  if (SandboxError.isInstance(error)) return error;
  const shape = (typeof error === "object" && error !== null ? error : {}) as ApiErrorShape;
  const status = typeof shape.response?.status === "number" ? shape.response.status : undefined;
  const apiCode = typeof shape.json?.error?.code === "string" ? shape.json.error.code : undefined;
  const apiMessage = typeof shape.json?.error?.message === "string" ? shape.json.error.message : undefined;
  if (status !== undefined) {
    const code = (apiCode === undefined ? undefined : API_CODES[apiCode]) ?? codeForHttpStatus(status);
    return new SandboxError(
      code,
      `${context.operation}: Vercel answered ${status}${apiCode ? ` ${apiCode}` : ""}: ${apiMessage ?? String(shape.message ?? "")}`,
      { provider: VERCEL_PROVIDER_NAME, status, retryable: isRetryableHttpStatus(status), cause: error },
    );
  }
  if (shape.name === "StreamError") {
    const code = typeof shape.code === "string" ? shape.code : "stream_error";
    return new SandboxError(
      API_CODES[code] ?? "Provider",
      `${context.operation}: the output stream ended: ${code}: ${String(shape.message ?? "")}`,
      { provider: VERCEL_PROVIDER_NAME, retryable: false, cause: error },
    );
  }
  return undefined;
}
