import { SandboxError, type SandboxErrorCode } from "@sbox/core/spec";
import { DOCKER_PROVIDER_NAME } from "./docker-labels.js";

/** Socket-level failures: the engine is down, restarting or unreachable. Worth retrying. */
const UNREACHABLE_ERRNOS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOENT",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ENOTFOUND",
  "ECONNABORTED",
  "ERR_STREAM_PREMATURE_CLOSE",
  "ERR_SOCKET_CLOSED",
]);

interface DockerodeErrorShape {
  name?: unknown;
  code?: unknown;
  statusCode?: unknown;
  message?: unknown;
  json?: unknown;
  syscall?: unknown;
  address?: unknown;
}

/** A SandboxError naming this provider (`toDockerError` is also used outside the driver methods). */
function dockerSandboxError(
  code: SandboxErrorCode,
  message: string,
  options: { status?: number | undefined; retryable?: boolean | undefined; cause?: unknown } = {},
): SandboxError {
  return new SandboxError(code, message, { provider: DOCKER_PROVIDER_NAME, ...options });
}

/** The engine's own message: dockerode prefixes it with "(HTTP code N) reason - ". */
function engineMessage(error: DockerodeErrorShape): string {
  const json = error.json as { message?: unknown } | null | undefined;
  if (json && typeof json === "object" && typeof json.message === "string") return json.message;
  const message = typeof error.message === "string" ? error.message : String(error);
  const dash = message.indexOf(" - ");
  return (message.startsWith("(HTTP code") && dash >= 0 ? message.slice(dash + 3) : message).trim();
}

/** What the engine says when a container is in the wrong state for the call, whatever HTTP status it uses. */
const WRONG_STATE =
  /is paused|not running|is restarting|is not paused|is already|is dead|marked for removal/i;

/**
 * Maps anything dockerode or the engine throws onto the taxonomy: 404 NotFound; 409 InvalidState when the
 * container is paused / not running, else Conflict; 400 Validation; 401/403 Unauthorized; 5xx Provider
 * (retryable); socket errors (refused, reset, missing socket) Provider, retryable; everything else
 * Provider. A SandboxError passes through unchanged.
 */
export function toDockerError(error: unknown, operation: string): SandboxError {
  if (SandboxError.isInstance(error)) return error;
  const e = (
    typeof error === "object" && error !== null ? error : { message: String(error) }
  ) as DockerodeErrorShape;
  const prefix = `docker ${operation}`;
  if (e.name === "AbortError") return dockerSandboxError("Aborted", `${prefix}: aborted`, { cause: error });
  if (e.name === "TimeoutError")
    return dockerSandboxError("Timeout", `${prefix}: timed out`, { cause: error });
  const status = typeof e.statusCode === "number" ? e.statusCode : undefined;
  if (status !== undefined) {
    const text = engineMessage(e);
    const message = `${prefix}: ${text} (HTTP ${status})`;
    const options = { status, cause: error };
    if (status === 404) return dockerSandboxError("NotFound", message, { ...options, retryable: false });
    if (status === 409) {
      const invalid = WRONG_STATE.test(text);
      return dockerSandboxError(invalid ? "InvalidState" : "Conflict", message, {
        ...options,
        retryable: false,
      });
    }
    if (status === 400) return dockerSandboxError("Validation", message, { ...options, retryable: false });
    if (status === 401 || status === 403)
      return dockerSandboxError("Unauthorized", message, { ...options, retryable: false });
    if (status === 304) return dockerSandboxError("InvalidState", message, { ...options, retryable: false });
    if (
      /not a directory|cannot overwrite directory|extraction point is not a directory|file name too long/i.test(
        text,
      )
    ) {
      return dockerSandboxError("Validation", message, { ...options, retryable: false });
    }
    // Docker 20.10 answers some of them with 500 (an unpause racing a pause: "is not paused").
    if (WRONG_STATE.test(text)) {
      return dockerSandboxError("InvalidState", message, { ...options, retryable: false });
    }
    if (/no space left|cannot allocate memory|pids limit/i.test(text)) {
      return dockerSandboxError("QuotaExceeded", message, { ...options, retryable: false });
    }
    return dockerSandboxError("Provider", message, { ...options, retryable: status >= 500 });
  }
  const errno = typeof e.code === "string" ? e.code : undefined;
  const text = typeof e.message === "string" ? e.message : String(error);
  if (errno === "EACCES" || errno === "EPERM") {
    return dockerSandboxError(
      "Unauthorized",
      `${prefix}: permission denied talking to the Docker Engine (${text})`,
      {
        cause: error,
        retryable: false,
      },
    );
  }
  if ((errno && UNREACHABLE_ERRNOS.has(errno)) || /socket hang up|premature close/i.test(text)) {
    return dockerSandboxError("Provider", `${prefix}: Docker Engine unreachable (${errno ?? text})`, {
      cause: error,
      retryable: true,
    });
  }
  return dockerSandboxError("Provider", `${prefix}: ${text}`, { cause: error, retryable: false });
}
