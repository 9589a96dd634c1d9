import type { HistoryEntry, RecordFilter, SandboxRecord } from "./sandbox-record.js";

/**
 * Durable storage of sandbox records. Every write is atomic together with its history row; `update` is a
 * compare-and-set on the record's version, so two writers that read the same version can never both
 * succeed. Implementations: `sqliteStore`, `postgresStore`, `memoryStore`.
 */
export interface SandboxStore {
  /** `"sqlite"`, `"postgres"`, `"memory"` or a custom name. */
  readonly kind: string;
  /** Opens the store and applies pending migrations. Called by every method; idempotent. */
  init(): Promise<void>;
  /**
   * Inserts a new record (its `version` must be 1) with its first history row. Throws a `Conflict`
   * `SandboxError` when a record with that id exists.
   */
  insert(record: SandboxRecord, entry: HistoryEntry): Promise<void>;
  /** The record, or `undefined`. */
  get(id: string): Promise<SandboxRecord | undefined>;
  /** Records matching every field of the filter, oldest first. */
  list(filter?: RecordFilter): Promise<SandboxRecord[]>;
  /**
   * Replaces the record when its stored version is `expectedVersion`, and appends `entry` in the same
   * transaction. `next.version` must be `expectedVersion + 1` and equal `entry.version`. Returns false
   * (and changes nothing) when the stored version differs or the record is missing.
   */
  update(expectedVersion: number, next: SandboxRecord, entry: HistoryEntry): Promise<boolean>;
  /** The record's history, oldest first. */
  history(id: string): Promise<HistoryEntry[]>;
  /** Releases connections and file handles. The store cannot be used afterwards. */
  close(): Promise<void>;
}
