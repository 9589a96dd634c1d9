/**
 * Every failure of the provider as a `SandboxError`, in one place (the cluster's calls use it, and it is
 * the provider's `mapError` for anything else a driver method throws): API statuses by their HTTP code and Status reason
 * (404 NotFound, 409 AlreadyExists/Conflict, 422 Invalid and 400 BadRequest → Validation, 401/403
 * Unauthorized, 410 Gone → Conflict, 429 and 5xx retryable), network failures (refused, reset, TLS,
 * DNS) as retryable `Provider` errors, aborts and timeouts as such. Messages quote the API server's own
 * message; credentials are the core's business (the provider declares them as `secrets`, and the core
 * removes them from every error, cause chain included).
 */
import {
  codeForHttpStatus,
  isRetryableHttpStatus,
  SandboxError,
  type SandboxErrorCode,
} from "@sbox/core/spec";
import { PROVIDER_NAME } from "./kubernetes-names.js";

/** Options of {@link kubernetesError}. */
export interface KubernetesErrorOptions {
  readonly status?: number | undefined;
  readonly retryable?: boolean | undefined;
  readonly cause?: unknown;
}

/** A SandboxError of this provider. */
export function kubernetesError(
  code: SandboxErrorCode,
  message: string,
  options: KubernetesErrorOptions = {},
): SandboxError {
  return new SandboxError(code, message, { provider: PROVIDER_NAME, ...options });
}

interface StatusBody {
  message?: unknown;
  reason?: unknown;
  code?: unknown;
}

function statusBody(body: unknown): StatusBody | undefined {
  if (typeof body === "string") {
    try {
      return JSON.parse(body) as StatusBody;
    } catch {
      return { message: body };
    }
  }
  return body && typeof body === "object" ? (body as StatusBody) : undefined;
}

const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ENOTFOUND",
  "ECONNABORTED",
  "UND_ERR_SOCKET",
  "ERR_SOCKET_CLOSED",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "CERT_HAS_EXPIRED",
]);

/** The SandboxError of an answer with HTTP `status` and a Status body. */
export function kubernetesStatusError(status: number, body: unknown, operation: string): SandboxError {
  const parsed = statusBody(body);
  const reason = typeof parsed?.reason === "string" ? parsed.reason : undefined;
  const text =
    typeof parsed?.message === "string" && parsed.message !== "" ? parsed.message : `HTTP ${status}`;
  let code: SandboxErrorCode = codeForHttpStatus(status);
  if (status === 422 || status === 400 || reason === "Invalid" || reason === "BadRequest")
    code = "Validation";
  else if (status === 410) code = "Conflict";
  else if (status === 403 && /exceeded quota|forbidden: exceeded/i.test(text)) code = "QuotaExceeded";
  const hint =
    status === 401
      ? " (the cluster rejected the credentials of the kubeconfig: check its user, token or client certificate)"
      : status === 403 && code !== "QuotaExceeded"
        ? " (the kubeconfig's user may not do this: check its RBAC permissions in the namespace)"
        : "";
  return kubernetesError(code, `kubernetes ${operation}: ${text}${hint}`, {
    status,
    retryable: isRetryableHttpStatus(status) || reason === "ServerTimeout" || reason === "TooManyRequests",
  });
}

/** Maps anything a Kubernetes call throws onto the taxonomy; a SandboxError passes through unchanged. */
export function toKubernetesError(error: unknown, operation: string): SandboxError {
  if (SandboxError.isInstance(error)) return error;
  const e = (typeof error === "object" && error !== null ? error : { message: String(error) }) as {
    name?: unknown;
    code?: unknown;
    body?: unknown;
    message?: unknown;
    cause?: { code?: unknown; message?: unknown };
    type?: unknown;
  };
  if (e.name === "AbortError" || e.type === "aborted")
    return kubernetesError("Aborted", `kubernetes ${operation}: aborted`, { cause: error });
  if (e.name === "TimeoutError")
    return kubernetesError("Timeout", `kubernetes ${operation}: the API server did not answer in time`, {
      retryable: true,
      cause: error,
    });
  if (typeof e.code === "number" && e.code >= 100) {
    const mapped = kubernetesStatusError(e.code, e.body, operation);
    return kubernetesError(mapped.code, mapped.message, {
      status: e.code,
      retryable: mapped.retryable,
      cause: error,
    });
  }
  const errno =
    typeof e.code === "string" ? e.code : typeof e.cause?.code === "string" ? e.cause.code : undefined;
  const text = typeof e.message === "string" ? e.message : String(error);
  if (
    (errno && NETWORK_CODES.has(errno)) ||
    /socket hang up|ECONNREFUSED|ECONNRESET|certificate|getaddrinfo/i.test(text)
  ) {
    return kubernetesError(
      "Provider",
      `kubernetes ${operation}: the API server is unreachable (${errno ?? text})`,
      {
        retryable: !/certificate|CERT/i.test(errno ?? text),
        cause: error,
      },
    );
  }
  return kubernetesError("Provider", `kubernetes ${operation}: ${text}`, { cause: error });
}
