import {
  codeForHttpStatus,
  isRetryableHttpStatus,
  type ProviderErrorContext,
  SandboxError,
  type SandboxErrorCode,
  type SandboxErrorOptions,
} from "@sbox/core/spec";
import { E2B_PROVIDER_NAME } from "./e2b-capabilities.js";
import { API_KEY_ENV } from "./e2b-options.js";

/** Which side of E2B a call went to: the control plane (API key) or a sandbox's daemon (envd). */
export type E2BPlane = "control" | "sandbox";

/** Where an error happened, for its message and for redaction. */
export interface E2BErrorContext {
  /** What was being done, e.g. `"create"` or `"files.read /a"`. */
  operation: string;
  /** Control plane or sandbox daemon (default control). */
  plane?: E2BPlane | undefined;
  /** The API key in use, scrubbed from the message (the provider's driver methods scrub it anyway). */
  apiKey?: string | undefined;
}

// Connect protocol code names, as the SDK spells them in ConnectError messages ("[not_found] ...").
const RPC_CODES: Readonly<Record<string, SandboxErrorCode>> = {
  canceled: "Timeout",
  unknown: "Provider",
  invalid_argument: "Validation",
  deadline_exceeded: "Timeout",
  not_found: "NotFound",
  already_exists: "Conflict",
  permission_denied: "Unauthorized",
  resource_exhausted: "QuotaExceeded",
  failed_precondition: "InvalidState",
  aborted: "Conflict",
  out_of_range: "Validation",
  unimplemented: "Provider",
  internal: "Provider",
  unavailable: "Provider",
  data_loss: "Provider",
  unauthenticated: "Unauthorized",
};

const RETRYABLE_RPC = new Set(["unavailable", "resource_exhausted", "deadline_exceeded", "canceled"]);

interface ErrorShape {
  name?: unknown;
  message?: unknown;
  statusCode?: unknown;
  code?: unknown;
  cause?: unknown;
}

function shapeOf(error: unknown): ErrorShape {
  return typeof error === "object" && error !== null ? (error as ErrorShape) : { message: String(error) };
}

/** A failure the daemon reports in words rather than codes: a path problem is the caller's, not E2B's. */
function codeFromText(text: string): SandboxErrorCode | undefined {
  if (
    /not a directory|is a directory|invalid path|path already exists but it is not a directory/i.test(text)
  ) {
    return "Validation";
  }
  if (/directory not empty/i.test(text)) return "Conflict";
  if (/no space left|not enough (disk space|inodes)/i.test(text)) return "QuotaExceeded";
  if (/permission denied|operation not permitted/i.test(text)) return "Unauthorized";
  return undefined;
}

function isUnreachable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current; depth++) {
    const e = shapeOf(current);
    const code = typeof e.code === "string" ? e.code : "";
    if (
      /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE|UND_ERR_\w+)$/.test(
        code,
      )
    ) {
      return true;
    }
    if (
      typeof e.message === "string" &&
      /fetch failed|socket hang up|other side closed|terminated/i.test(e.message)
    ) {
      return true;
    }
    current = e.cause;
  }
  return false;
}

/**
 * Maps anything the `e2b` SDK throws onto the taxonomy. Authentication failures of the control plane become
 * `Unauthorized` naming `E2B_API_KEY` (never the key); missing sandboxes and files `NotFound`; the SDK's
 * timeouts `Timeout`; rate limits `QuotaExceeded` (retryable); a busy service or an unreachable endpoint a
 * retryable `Provider`; HTTP statuses and Connect codes by table. A `SandboxError` passes through unchanged.
 */
export function toE2BError(error: unknown, context: E2BErrorContext): SandboxError {
  if (SandboxError.isInstance(error)) return error;
  const e = shapeOf(error);
  const name = typeof e.name === "string" ? e.name : "";
  const raw = typeof e.message === "string" ? e.message : String(error);
  const plane = context.plane ?? "control";
  const prefix = `e2b ${context.operation}`;
  const base = { cause: error };
  const e2bError = (code: SandboxErrorCode, message: string, options: SandboxErrorOptions): SandboxError =>
    new SandboxError(code, message, { provider: E2B_PROVIDER_NAME, secrets: [context.apiKey], ...options });
  const status = typeof e.statusCode === "number" ? e.statusCode : undefined;

  if (name === "AbortError") return e2bError("Aborted", `${prefix}: aborted`, { ...base, retryable: false });
  if (name === "AuthenticationError" || name === "GitAuthError") {
    const message =
      plane === "control"
        ? `${prefix}: E2B refused the API key; set ${API_KEY_ENV} (or the apiKey option) to a valid, unexpired key (${raw})`
        : `${prefix}: the sandbox refused the request (its access token or the user is not accepted): ${raw}`;
    return e2bError("Unauthorized", message, { ...base, status: 401, retryable: false });
  }
  if (name === "SandboxNotFoundError" || name === "FileNotFoundError" || name === "NotFoundError") {
    return e2bError("NotFound", `${prefix}: ${raw}`, { ...base, status: status ?? 404, retryable: false });
  }
  if (name === "RateLimitError") {
    return e2bError("QuotaExceeded", `${prefix}: ${raw}`, { ...base, status: 429, retryable: true });
  }
  if (name === "ServiceBusyError") {
    return e2bError("Provider", `${prefix}: ${raw}`, { ...base, status: 503, retryable: true });
  }
  if (name === "TimeoutError") return e2bError("Timeout", `${prefix}: ${raw}`, { ...base, retryable: true });
  if (name === "InvalidArgumentError") {
    return e2bError("Validation", `${prefix}: ${raw}`, { ...base, status, retryable: false });
  }
  if (name === "NotEnoughSpaceError") {
    return e2bError("QuotaExceeded", `${prefix}: ${raw}`, { ...base, status: 507, retryable: false });
  }
  if (name === "TemplateError") {
    return e2bError("Validation", `${prefix}: the sandbox's template cannot do this: ${raw}`, {
      ...base,
      retryable: false,
    });
  }
  if (status !== undefined && status >= 400) {
    const fromText = codeFromText(raw);
    return e2bError(fromText ?? codeForHttpStatus(status), `${prefix}: ${raw}`, {
      ...base,
      status,
      // A path problem reported as a server error stays the caller's problem: retrying cannot help.
      retryable: fromText === undefined && isRetryableHttpStatus(status),
    });
  }
  // Daemon HTTP failures arrive as "<status>: <message>", RPC failures as "<n>: [<code>] <message>".
  const rpc = /\[([a-z_]+)\]/.exec(raw);
  if (rpc?.[1] && RPC_CODES[rpc[1]]) {
    const code = codeFromText(raw) ?? RPC_CODES[rpc[1]]!;
    return e2bError(code, `${prefix}: ${raw}`, { ...base, retryable: RETRYABLE_RPC.has(rpc[1]) });
  }
  const http = /^(\d{3}): /.exec(raw);
  if (http?.[1]) {
    const httpStatus = Number(http[1]);
    const fromText = codeFromText(raw);
    return e2bError(fromText ?? codeForHttpStatus(httpStatus), `${prefix}: ${raw}`, {
      ...base,
      status: httpStatus,
      retryable: fromText === undefined && isRetryableHttpStatus(httpStatus),
    });
  }
  if (isUnreachable(error)) {
    const where = plane === "control" ? "the E2B API" : "the sandbox";
    return e2bError("Provider", `${prefix}: ${where} is unreachable (${raw})`, { ...base, retryable: true });
  }
  return e2bError(codeFromText(raw) ?? "Provider", `${prefix}: ${raw}`, { ...base, retryable: false });
}

/** Driver methods that go to E2B's control plane (the API key); the others go to a sandbox's daemon. */
const CONTROL_PLANE_METHODS: ReadonlySet<string> = new Set([
  "doCreate",
  "doConnect",
  "doDestroy",
  "doGetInfo",
  "doList",
  "doPause",
  "doResume",
  "doSetTimeout",
  "doMetrics",
  "doFork",
  "doSetEgress",
]);

/** The provider's `mapError`: {@link toE2BError} on the plane the failed driver method talks to. */
export function mapE2BError(error: unknown, context: ProviderErrorContext): SandboxError {
  const plane: E2BPlane = CONTROL_PLANE_METHODS.has(context.method) ? "control" : "sandbox";
  const operation =
    plane === "control" && context.sandboxId
      ? `${context.operation} ${context.sandboxId}`
      : context.operation;
  return toE2BError(error, { operation, plane });
}
