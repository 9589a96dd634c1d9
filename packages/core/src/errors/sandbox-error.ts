import { RETRYABLE_BY_DEFAULT, type SandboxErrorCode } from "./error-codes.js";
import { redactSecrets } from "./redact.js";

const MARKER = Symbol.for("sbox.error");
const NOT_SUPPORTED_MARKER = Symbol.for("sbox.error.not-supported");

/** Options for constructing a {@link SandboxError}. */
export interface SandboxErrorOptions {
  /** The provider the error came from, e.g. `"docker"`. */
  provider?: string | undefined;
  /** The HTTP (or similar) status the provider answered with, when there was one. */
  status?: number | undefined;
  /** Whether a retry may succeed; defaults by code (Timeout, QuotaExceeded, Provider are retryable). */
  retryable?: boolean | undefined;
  /** The underlying error, kept for debugging. */
  cause?: unknown;
  /** Literal secrets (API keys, tokens) to scrub from the message. */
  secrets?: readonly (string | undefined)[] | undefined;
}

/**
 * The one error class of sbox. Every error that leaves the SDK is a `SandboxError` with a `code`; native
 * errors are wrapped and kept as `cause`. Messages never contain credentials.
 */
export class SandboxError extends Error {
  /** The taxonomy code. */
  readonly code: SandboxErrorCode;
  /** The provider the error came from, when known. */
  readonly provider: string | undefined;
  /** The provider's status code, when there was one. */
  readonly status: number | undefined;
  /** Whether retrying the same call may succeed. */
  readonly retryable: boolean;

  constructor(code: SandboxErrorCode, message: string, options: SandboxErrorOptions = {}) {
    super(
      redactSecrets(message, options.secrets),
      options.cause === undefined ? {} : { cause: options.cause },
    );
    this.name = "SandboxError";
    this.code = code;
    this.provider = options.provider;
    this.status = options.status;
    this.retryable = options.retryable ?? RETRYABLE_BY_DEFAULT.includes(code);
    // A registered symbol survives duplicated package copies, unlike instanceof.
    Object.defineProperty(this, MARKER, { value: true });
  }

  /** True for any `SandboxError`, also one created by another copy of this package. */
  static isInstance(value: unknown): value is SandboxError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
  }
}

/** Thrown before any provider call when a capability is unsupported by the sandbox's provider. */
export class NotSupportedError extends SandboxError {
  /** The capability (or feature) that is not supported. */
  readonly feature: string;

  constructor(feature: string, provider?: string, detail?: string) {
    super(
      "NotSupported",
      `${feature} is not supported by provider ${provider ?? "(unknown)"}${detail ? `: ${detail}` : ""}`,
      { provider, retryable: false },
    );
    this.name = "NotSupportedError";
    this.feature = feature;
    Object.defineProperty(this, NOT_SUPPORTED_MARKER, { value: true });
  }

  /** True only for a `NotSupportedError` (also one from another copy of this package), not for any `SandboxError`. */
  static override isInstance(value: unknown): value is NotSupportedError {
    return (
      SandboxError.isInstance(value) &&
      (value as unknown as Record<symbol, unknown>)[NOT_SUPPORTED_MARKER] === true
    );
  }
}
