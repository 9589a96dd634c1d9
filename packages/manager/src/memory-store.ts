import { SandboxError } from "@sbox/core/spec";
import { assertWritable, matchesFilter, normalizeFilter } from "./record-filter.js";
import type { HistoryEntry, RecordFilter, SandboxRecord } from "./sandbox-record.js";
import type { SandboxStore } from "./sandbox-store.js";

function byCreation(a: SandboxRecord, b: SandboxRecord): number {
  return a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * A store that lives in this process only: for tests and throwaway scripts. Records are copied in and out,
 * so callers can never change stored state by mutating what they got.
 */
export function memoryStore(): SandboxStore {
  const records = new Map<string, SandboxRecord>();
  const histories = new Map<string, HistoryEntry[]>();
  let closed = false;
  const open = (): void => {
    if (closed) throw new SandboxError("InvalidState", "memory store is closed", { retryable: false });
  };
  return {
    kind: "memory",
    async init() {
      open();
    },
    async insert(record, entry) {
      open();
      assertWritable(undefined, record, entry.version);
      if (records.has(record.id)) {
        throw new SandboxError("Conflict", `record ${record.id} already exists`, { retryable: false });
      }
      records.set(record.id, structuredClone(record));
      histories.set(record.id, [structuredClone(entry)]);
    },
    async get(id) {
      open();
      const record = records.get(id);
      return record ? structuredClone(record) : undefined;
    },
    async list(filter?: RecordFilter) {
      open();
      const normalized = normalizeFilter(filter);
      const found = [...records.values()].filter((r) => matchesFilter(r, normalized)).sort(byCreation);
      return structuredClone(normalized.limit === undefined ? found : found.slice(0, normalized.limit));
    },
    async update(expectedVersion, next, entry) {
      open();
      assertWritable(expectedVersion, next, entry.version);
      const current = records.get(next.id);
      if (!current || current.version !== expectedVersion) return false;
      records.set(next.id, structuredClone(next));
      histories.get(next.id)?.push(structuredClone(entry));
      return true;
    },
    async history(id) {
      open();
      return structuredClone(histories.get(id) ?? []);
    },
    async close() {
      closed = true;
    },
  };
}
