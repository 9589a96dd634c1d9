import { SandboxError } from "@sbox/core";
import type { RecordError, SandboxRecord } from "./sandbox-record.js";

/**
 * A sandbox could not be brought to `running` because the checkout, a setup step or the main process
 * failed. The record is `failed` (or back to `stopped` for a resume) with the same details.
 * Code `Provider`, not retryable: running the same steps again would fail the same way.
 */
export class ProvisionError extends SandboxError {
  /** The record that failed. */
  readonly recordId: string;
  /** What the record says about the failure: code (`GitFailed`, `SetupFailed`, `StartFailed`), step, exit code, output tail. */
  readonly failure: RecordError;

  constructor(
    recordId: string,
    failure: RecordError,
    options: { provider?: string | undefined; cause?: unknown } = {},
  ) {
    const where = failure.step ? ` at step ${failure.step.index + 1} (${failure.step.name})` : "";
    super("Provider", `sandbox record ${recordId}: ${failure.code}${where}: ${failure.message}`, {
      provider: options.provider,
      cause: options.cause,
      retryable: false,
    });
    this.name = "ProvisionError";
    this.recordId = recordId;
    this.failure = failure;
  }
}

/** Another worker holds the record's lease and did not finish within the wait. */
export function busyError(
  record: SandboxRecord,
  operation: string,
  waitedMs: number,
  cause?: unknown,
): SandboxError {
  const lease = record.lease
    ? ` by worker ${record.lease.owner} (lease until ${record.lease.expiresAt.toISOString()})`
    : "";
  return new SandboxError(
    "Conflict",
    `${operation}: sandbox record ${record.id} is busy: ${record.status}${lease}; waited ${waitedMs} ms for it to finish`,
    { retryable: true, cause },
  );
}

/** The operation does not apply to the record's current status. */
export function invalidState(record: SandboxRecord, operation: string, hint = ""): SandboxError {
  return new SandboxError(
    "InvalidState",
    `${operation}: sandbox record ${record.id} is ${record.status}${hint ? `; ${hint}` : ""}`,
    { retryable: false },
  );
}
