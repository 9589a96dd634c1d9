import type { SandboxRecord } from "@sbox/manager";

/** The part of a record shown in `--json` output and `info`. */
export function recordToJson(record: SandboxRecord): Record<string, unknown> {
  return {
    id: record.id,
    status: record.status,
    ownerId: record.ownerId,
    labels: record.labels,
    expiresAt: record.expiresAt ? record.expiresAt.toISOString() : null,
    ...(record.error ? { error: { code: record.error.code, message: record.error.message } } : {}),
  };
}
