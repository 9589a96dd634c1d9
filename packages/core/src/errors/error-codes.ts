/** The error taxonomy: every error leaving the SDK carries one of these codes. */
export const SANDBOX_ERROR_CODES = [
  "NotFound",
  "Unauthorized",
  "Timeout",
  "Aborted",
  "QuotaExceeded",
  "NotSupported",
  "Conflict",
  "Validation",
  "InvalidState",
  "AllProvidersFailed",
  "Provider",
] as const;

/** One code of the taxonomy. */
export type SandboxErrorCode = (typeof SANDBOX_ERROR_CODES)[number];

/** Codes that are worth retrying by default (a later attempt may succeed). */
export const RETRYABLE_BY_DEFAULT: readonly SandboxErrorCode[] = ["Timeout", "QuotaExceeded", "Provider"];
