/**
 * `@sbox/manager`: durable sandbox records over any sbox provider.
 */

export { ProvisionError } from "./manager-errors.js";
export { NAMESPACE_LABEL, RECORD_LABEL } from "./manager-labels.js";
export type {
  GitCredentials,
  GitSource,
  ManagedCommand,
  ManagerSpec,
  SeedFile,
  SetupStep,
  StartCommand,
  StoredSeedFile,
  StoredSpec,
} from "./manager-spec.js";
export { memoryStore } from "./memory-store.js";
export { POSTGRES_MIGRATIONS } from "./postgres-schema.js";
export type { PgClientLike, PgPoolLike, PgQueryResultLike, PostgresStoreOptions } from "./postgres-store.js";
export { postgresStore } from "./postgres-store.js";
export type { ReconcileChange, ReconcileReport } from "./reconcile.js";
export type {
  CreateSandboxInput,
  FilesInput,
  LogsOptions,
  SandboxManagerOptions,
  StopExpiredResult,
} from "./sandbox-manager.js";
export { SandboxManager } from "./sandbox-manager.js";
export type {
  HistoryEntry,
  HistoryKind,
  RecordError,
  RecordFilter,
  RecordLease,
  RecordRuntime,
  SandboxRecord,
  SandboxStatus,
} from "./sandbox-record.js";
export {
  isSandboxStatus,
  isTransitional,
  SANDBOX_STATUSES,
  TRANSITIONAL_STATUSES,
} from "./sandbox-record.js";
export type { SandboxStore } from "./sandbox-store.js";
export { defaultSqlitePath, sboxHome } from "./sbox-home.js";
export type { StoreMigration } from "./sqlite-schema.js";
export { SQLITE_MIGRATIONS } from "./sqlite-schema.js";
export type { SqliteStoreOptions } from "./sqlite-store.js";
export { sqliteStore } from "./sqlite-store.js";
