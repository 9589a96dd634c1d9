import type { HistoryEntry, HistoryKind, SandboxRecord } from "./sandbox-record.js";
import type { SandboxStore } from "./sandbox-store.js";

/** What every compare-and-set write needs. */
export interface WriterContext {
  readonly store: SandboxStore;
  /** The worker id written into history rows and leases. */
  readonly actor: string;
  now(): Date;
  /** Called after every successful write. */
  onChange(entry: HistoryEntry, record: SandboxRecord): void;
}

/** Changes a write may make: anything but the identity and the version bookkeeping. */
export type RecordChanges = Partial<Omit<SandboxRecord, "id" | "version" | "createdAt" | "updatedAt">>;

/**
 * Compare-and-set: writes `current` with `changes` as version `current.version + 1`, with its history
 * row, only if the stored version is still `current.version`. Returns the new record, or undefined when
 * someone else changed the record first.
 */
export async function writeRecord(
  context: WriterContext,
  current: SandboxRecord,
  changes: RecordChanges,
  kind: HistoryKind,
  detail: string | null,
): Promise<SandboxRecord | undefined> {
  const at = context.now();
  const next: SandboxRecord = { ...current, ...changes, version: current.version + 1, updatedAt: at };
  const entry: HistoryEntry = {
    recordId: current.id,
    version: next.version,
    kind,
    fromStatus: current.status,
    toStatus: next.status,
    actor: context.actor,
    at,
    detail,
  };
  if (!(await context.store.update(current.version, next, entry))) return undefined;
  context.onChange(entry, next);
  return next;
}
