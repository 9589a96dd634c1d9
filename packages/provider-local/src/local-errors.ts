import { SandboxError, type SandboxErrorCode, toSandboxError } from "@sbox/core/spec";

/** The provider name, used as the id prefix (`"local:<id>"`) and in every error. */
export const LOCAL_PROVIDER_NAME = "local";

// Errno codes the core's generic table does not know, or where a sandbox on disk means something more precise.
const LOCAL_ERRNO_CODES: Readonly<Record<string, SandboxErrorCode>> = {
  ELOOP: "Validation",
  ENAMETOOLONG: "Validation",
  EROFS: "Unauthorized",
  ENOSPC: "QuotaExceeded",
  EDQUOT: "QuotaExceeded",
  EFBIG: "QuotaExceeded",
  EBUSY: "Conflict",
  EXDEV: "Provider",
  EMFILE: "Provider",
  ENFILE: "Provider",
};

/** A `SandboxError` of this provider. */
export function localError(code: SandboxErrorCode, message: string, cause?: unknown): SandboxError {
  return new SandboxError(code, message, {
    provider: LOCAL_PROVIDER_NAME,
    cause,
    retryable: code === "Provider",
  });
}

/**
 * Turns anything thrown into a `SandboxError` of this provider: the provider's `mapError` (every driver
 * method's failure leaves through it), and what its own handles and callbacks reject with. Node errno errors
 * keep their code in the message; host paths in them are kept (they are the caller's own paths, never a
 * credential).
 */
export function toLocalError(error: unknown, operation: string): SandboxError {
  if (SandboxError.isInstance(error)) return error;
  const errno = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof errno === "string" && LOCAL_ERRNO_CODES[errno]) {
    const message = error instanceof Error ? error.message : String(error);
    return new SandboxError(LOCAL_ERRNO_CODES[errno]!, `${operation}: ${message}`, {
      provider: LOCAL_PROVIDER_NAME,
      cause: error,
      retryable: errno === "EMFILE" || errno === "ENFILE",
    });
  }
  return toSandboxError(error, { provider: LOCAL_PROVIDER_NAME, operation });
}

/** The error a call reports when its signal fired: the signal's own `SandboxError` reason, else `Aborted`. */
export function abortErrorOf(signal: AbortSignal, operation: string): SandboxError {
  const reason: unknown = signal.reason;
  if (SandboxError.isInstance(reason)) return reason;
  return localError("Aborted", `${operation} was aborted`, reason);
}

/** Throws the abort error when `signal` has already fired. */
export function throwIfAborted(signal: AbortSignal | undefined, operation: string): void {
  if (signal?.aborted) throw abortErrorOf(signal, operation);
}
