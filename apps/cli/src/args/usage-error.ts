import { SandboxError } from "@sbox/core";

const USAGE = Symbol.for("sbox.cli.usage");

/**
 * A wrong command line. It is a `Validation` SandboxError like every error the CLI raises, but exits with
 * the usage code (2) rather than the validation code (7), as `sbox --help` documents.
 */
export function usageError(message: string): SandboxError {
  const error = new SandboxError("Validation", message, { retryable: false });
  Object.defineProperty(error, USAGE, { value: true });
  return error;
}

/** True for errors made by {@link usageError}. */
export function isUsageError(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as Record<symbol, unknown>)[USAGE] === true;
}
