import type { SandboxRecord } from "@sbox/manager";

/**
 * The part of a record shown in `--json` output and `info`. Its expiry is not repeated here: the
 * sandbox's `expiresAt` already is the effective one.
 */
export function recordToJson(record: SandboxRecord): Record<string, unknown> {
  return {
    id: record.id,
    status: record.status,
    ownerId: record.ownerId,
    labels: record.labels,
    ...(record.error ? { error: { code: record.error.code, message: record.error.message } } : {}),
  };
}
