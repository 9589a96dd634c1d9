import { SandboxError } from "@sbox/core/spec";
import {
  isSandboxStatus,
  type RecordFilter,
  type SandboxRecord,
  type SandboxStatus,
} from "./sandbox-record.js";

/** A filter after validation: statuses as an array, everything else checked. */
export interface NormalizedFilter {
  ids: readonly string[] | undefined;
  ownerId: string | undefined;
  labels: [string, string][];
  statuses: readonly SandboxStatus[] | undefined;
  provider: string | undefined;
  sandboxId: string | undefined;
  expiresBefore: Date | undefined;
  limit: number | undefined;
}

const KNOWN_KEYS = new Set([
  "ids",
  "ownerId",
  "labels",
  "status",
  "provider",
  "sandboxId",
  "expiresBefore",
  "limit",
]);

function invalid(message: string): SandboxError {
  return new SandboxError("Validation", `list filter: ${message}`, { retryable: false });
}

/**
 * Validates a filter so that every store honours the same fields the same way; an unknown field or a
 * wrong type is a `Validation` error, never silently ignored.
 */
export function normalizeFilter(filter: RecordFilter = {}): NormalizedFilter {
  if (typeof filter !== "object" || filter === null) throw invalid("must be an object");
  for (const key of Object.keys(filter)) {
    if (!KNOWN_KEYS.has(key)) throw invalid(`unknown field ${JSON.stringify(key)}`);
  }
  const optionalString = (name: string, value: unknown): string | undefined => {
    if (value === undefined) return undefined;
    if (typeof value !== "string") throw invalid(`${name} must be a string`);
    return value;
  };
  let ids: readonly string[] | undefined;
  if (filter.ids !== undefined) {
    if (!Array.isArray(filter.ids) || filter.ids.some((id) => typeof id !== "string")) {
      throw invalid("ids must be an array of strings");
    }
    ids = filter.ids;
  }
  const labels: [string, string][] = [];
  if (filter.labels !== undefined) {
    if (typeof filter.labels !== "object" || filter.labels === null || Array.isArray(filter.labels)) {
      throw invalid("labels must be an object of strings");
    }
    for (const [key, value] of Object.entries(filter.labels)) {
      if (typeof value !== "string") throw invalid(`label ${JSON.stringify(key)} must be a string`);
      labels.push([key, value]);
    }
  }
  let statuses: readonly SandboxStatus[] | undefined;
  if (filter.status !== undefined) {
    const list: readonly unknown[] = Array.isArray(filter.status) ? filter.status : [filter.status];
    for (const status of list) {
      if (!isSandboxStatus(status)) throw invalid(`unknown status ${JSON.stringify(status)}`);
    }
    statuses = list as readonly SandboxStatus[];
  }
  if (filter.expiresBefore !== undefined && !(filter.expiresBefore instanceof Date)) {
    throw invalid("expiresBefore must be a Date");
  }
  if (filter.expiresBefore !== undefined && Number.isNaN(filter.expiresBefore.getTime())) {
    throw invalid("expiresBefore is an invalid Date");
  }
  if (filter.limit !== undefined && (!Number.isInteger(filter.limit) || filter.limit < 0)) {
    throw invalid("limit must be a non-negative integer");
  }
  return {
    ids,
    ownerId: optionalString("ownerId", filter.ownerId),
    labels,
    statuses,
    provider: optionalString("provider", filter.provider),
    sandboxId: optionalString("sandboxId", filter.sandboxId),
    expiresBefore: filter.expiresBefore,
    limit: filter.limit,
  };
}

/** Whether a record matches a normalized filter (the memory store's query, and a cross-check for the others). */
export function matchesFilter(record: SandboxRecord, filter: NormalizedFilter): boolean {
  if (filter.ids && !filter.ids.includes(record.id)) return false;
  if (filter.ownerId !== undefined && record.ownerId !== filter.ownerId) return false;
  for (const [key, value] of filter.labels) {
    if (!Object.hasOwn(record.labels, key) || record.labels[key] !== value) return false;
  }
  if (filter.statuses && !filter.statuses.includes(record.status)) return false;
  if (filter.provider !== undefined && record.provider !== filter.provider) return false;
  if (filter.sandboxId !== undefined && record.sandboxId !== filter.sandboxId) return false;
  if (filter.expiresBefore !== undefined) {
    if (record.expiresAt === null || record.expiresAt.getTime() > filter.expiresBefore.getTime())
      return false;
  }
  return true;
}

/** Checks the invariants every store relies on before writing. */
export function assertWritable(
  expectedVersion: number | undefined,
  next: SandboxRecord,
  entryVersion: number,
): void {
  const want = expectedVersion === undefined ? 1 : expectedVersion + 1;
  if (next.version !== want || entryVersion !== want) {
    throw new SandboxError(
      "Validation",
      `store write of ${next.id}: version must be ${want} (record ${next.version}, history ${entryVersion})`,
      { retryable: false },
    );
  }
}
