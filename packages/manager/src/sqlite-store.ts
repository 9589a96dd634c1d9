import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { optionalPackageError, SandboxError, toSandboxError } from "@sbox/core/spec";
import type BetterSqlite3 from "better-sqlite3";
import { decodeRecordError, encodeRecordError, parseJsonColumn } from "./record-codec.js";
import { assertWritable, type NormalizedFilter, normalizeFilter } from "./record-filter.js";
import type { HistoryEntry, RecordFilter, SandboxRecord, SandboxStatus } from "./sandbox-record.js";
import type { SandboxStore } from "./sandbox-store.js";
import { defaultSqlitePath } from "./sbox-home.js";
import { SQLITE_MIGRATIONS } from "./sqlite-schema.js";

/** Options of {@link sqliteStore}. */
export interface SqliteStoreOptions {
  /** Database file; `":memory:"` for a private in-memory database. Default `$SBOX_HOME/manager.db`. */
  path?: string | undefined;
  /** How long a writer waits for another process's write lock before failing (default 10 000 ms). */
  busyTimeoutMs?: number | undefined;
}

interface SandboxRow {
  id: string;
  version: number;
  status: string;
  provider: string;
  sandbox_id: string | null;
  owner_id: string | null;
  labels: string;
  metadata: string;
  spec: string;
  lease_owner: string | null;
  lease_expires_at: number | null;
  error: string | null;
  runtime: string;
  created_at: number;
  updated_at: number;
  expires_at: number | null;
}

interface HistoryRow {
  record_id: string;
  version: number;
  kind: string;
  from_status: string | null;
  to_status: string;
  actor: string;
  at: number;
  detail: string | null;
}

const COLUMNS =
  "id, version, status, provider, sandbox_id, owner_id, labels, metadata, spec, lease_owner, lease_expires_at, error, runtime, created_at, updated_at, expires_at";

function toRow(record: SandboxRecord): SandboxRow {
  return {
    id: record.id,
    version: record.version,
    status: record.status,
    provider: record.provider,
    sandbox_id: record.sandboxId,
    owner_id: record.ownerId,
    labels: JSON.stringify(record.labels),
    metadata: JSON.stringify(record.metadata),
    spec: JSON.stringify(record.spec),
    lease_owner: record.lease?.owner ?? null,
    lease_expires_at: record.lease?.expiresAt.getTime() ?? null,
    error: record.error ? JSON.stringify(encodeRecordError(record.error)) : null,
    runtime: JSON.stringify(record.runtime),
    created_at: record.createdAt.getTime(),
    updated_at: record.updatedAt.getTime(),
    expires_at: record.expiresAt?.getTime() ?? null,
  };
}

function fromRow(row: SandboxRow): SandboxRecord {
  const id = row.id;
  return {
    id,
    version: row.version,
    status: row.status as SandboxStatus,
    provider: row.provider,
    sandboxId: row.sandbox_id,
    ownerId: row.owner_id,
    labels: parseJsonColumn(row.labels, "labels", id),
    metadata: parseJsonColumn(row.metadata, "metadata", id),
    spec: parseJsonColumn(row.spec, "spec", id),
    lease:
      row.lease_owner !== null && row.lease_expires_at !== null
        ? { owner: row.lease_owner, expiresAt: new Date(row.lease_expires_at) }
        : null,
    error: row.error === null ? null : decodeRecordError(parseJsonColumn(row.error, "error", id)),
    runtime: parseJsonColumn(row.runtime, "runtime", id),
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
  };
}

function historyParams(entry: HistoryEntry): HistoryRow {
  return {
    record_id: entry.recordId,
    version: entry.version,
    kind: entry.kind,
    from_status: entry.fromStatus,
    to_status: entry.toStatus,
    actor: entry.actor,
    at: entry.at.getTime(),
    detail: entry.detail,
  };
}

function whereOf(filter: NormalizedFilter): { sql: string; params: unknown[] } {
  const clauses: string[] = [];
  const params: unknown[] = [];
  if (filter.ids) {
    if (filter.ids.length === 0) clauses.push("0");
    else {
      clauses.push(`id IN (${filter.ids.map(() => "?").join(", ")})`);
      params.push(...filter.ids);
    }
  }
  if (filter.ownerId !== undefined) {
    clauses.push("owner_id = ?");
    params.push(filter.ownerId);
  }
  for (const [key, value] of filter.labels) {
    // json_each avoids building a JSON path from the key, so any key is matched literally.
    clauses.push(
      "EXISTS (SELECT 1 FROM json_each(sbox_sandboxes.labels) AS l WHERE l.key = ? AND l.type = 'text' AND l.value = ?)",
    );
    params.push(key, value);
  }
  if (filter.statuses) {
    if (filter.statuses.length === 0) clauses.push("0");
    else {
      clauses.push(`status IN (${filter.statuses.map(() => "?").join(", ")})`);
      params.push(...filter.statuses);
    }
  }
  if (filter.provider !== undefined) {
    clauses.push("provider = ?");
    params.push(filter.provider);
  }
  if (filter.sandboxId !== undefined) {
    clauses.push("sandbox_id = ?");
    params.push(filter.sandboxId);
  }
  if (filter.expiresBefore !== undefined) {
    clauses.push("expires_at IS NOT NULL AND expires_at <= ?");
    params.push(filter.expiresBefore.getTime());
  }
  return { sql: clauses.length > 0 ? `WHERE ${clauses.join(" AND ")}` : "", params };
}

/** Most distinct list queries (one per filter shape) whose prepared statements a store keeps. */
const QUERY_CACHE_SIZE = 64;

/** An open database with every fixed statement prepared once, and a bounded cache for list queries. */
interface SqliteHandle {
  readonly db: BetterSqlite3.Database;
  readonly get: BetterSqlite3.Statement;
  readonly history: BetterSqlite3.Statement;
  /** Inserts a record and its first history entry in one transaction; false when the id exists. */
  readonly insertWithHistory: BetterSqlite3.Transaction<(row: SandboxRow, entry: HistoryRow) => boolean>;
  /** The compare-and-set update and its history entry in one transaction; false when the version moved. */
  readonly updateWithHistory: BetterSqlite3.Transaction<
    (row: SandboxRow & { expected: number }, entry: HistoryRow) => boolean
  >;
  /** A prepared statement for `sql`, prepared on its first use and kept (least recently used goes first). */
  query(sql: string): BetterSqlite3.Statement;
}

/**
 * Prepares the store's statements once per open database: preparing compiles SQL, which cost a third of a
 * compare-and-set when it was done on every call.
 */
function prepareStatements(db: BetterSqlite3.Database): SqliteHandle {
  const insertRecord = db.prepare(
    `INSERT INTO sbox_sandboxes (${COLUMNS}) VALUES (@id, @version, @status, @provider, @sandbox_id, @owner_id, @labels, @metadata, @spec, @lease_owner, @lease_expires_at, @error, @runtime, @created_at, @updated_at, @expires_at) ON CONFLICT (id) DO NOTHING`,
  );
  const updateRecord = db.prepare(
    "UPDATE sbox_sandboxes SET version = @version, status = @status, provider = @provider, sandbox_id = @sandbox_id, owner_id = @owner_id, labels = @labels, metadata = @metadata, spec = @spec, lease_owner = @lease_owner, lease_expires_at = @lease_expires_at, error = @error, runtime = @runtime, created_at = @created_at, updated_at = @updated_at, expires_at = @expires_at WHERE id = @id AND version = @expected",
  );
  const insertHistory = db.prepare(
    "INSERT INTO sbox_sandbox_history (record_id, version, kind, from_status, to_status, actor, at, detail) VALUES (@record_id, @version, @kind, @from_status, @to_status, @actor, @at, @detail)",
  );
  const queries = new Map<string, BetterSqlite3.Statement>();
  return {
    db,
    get: db.prepare(`SELECT ${COLUMNS} FROM sbox_sandboxes WHERE id = ?`),
    history: db.prepare(
      "SELECT record_id, version, kind, from_status, to_status, actor, at, detail FROM sbox_sandbox_history WHERE record_id = ? ORDER BY version",
    ),
    insertWithHistory: db.transaction((row: SandboxRow, entry: HistoryRow) => {
      if (insertRecord.run(row).changes !== 1) return false;
      insertHistory.run(entry);
      return true;
    }),
    updateWithHistory: db.transaction((row: SandboxRow & { expected: number }, entry: HistoryRow) => {
      if (updateRecord.run(row).changes !== 1) return false;
      insertHistory.run(entry);
      return true;
    }),
    query(sql) {
      let statement = queries.get(sql);
      if (statement) queries.delete(sql);
      else {
        statement = db.prepare(sql);
        if (queries.size >= QUERY_CACHE_SIZE) queries.delete(queries.keys().next().value as string);
      }
      queries.set(sql, statement);
      return statement;
    },
  };
}

/**
 * The embedded default store: one SQLite file (WAL mode) shared safely by every process on this machine.
 * `better-sqlite3` is loaded on first use, so importing the manager costs nothing until then.
 * The schema is in `sqlite-schema.ts` and the package README.
 */
export function sqliteStore(options: SqliteStoreOptions = {}): SandboxStore {
  const path = options.path ?? defaultSqlitePath();
  const busyTimeoutMs = options.busyTimeoutMs ?? 10_000;
  let opening: Promise<SqliteHandle> | undefined;
  let closed = false;

  const open = async (): Promise<SqliteHandle> => {
    if (closed) throw new SandboxError("InvalidState", "sqlite store is closed", { retryable: false });
    opening ??= (async () => {
      let Database: typeof BetterSqlite3;
      try {
        // A CommonJS module: Node hands its export as `default`, the type declarations as the module itself.
        const loaded = (await import("better-sqlite3")) as unknown as { default?: typeof BetterSqlite3 };
        Database = loaded.default ?? (loaded as unknown as typeof BetterSqlite3);
      } catch (cause) {
        // An optional peer: only the SQLite store needs it (and its native build).
        throw optionalPackageError(cause, "better-sqlite3", "the sqlite store of @sbox/manager");
      }
      try {
        if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
        const db = new Database(path, { timeout: busyTimeoutMs });
        db.pragma("journal_mode = WAL");
        db.pragma("synchronous = NORMAL");
        migrate(db);
        return prepareStatements(db);
      } catch (cause) {
        throw toSandboxError(cause, { operation: `sqlite store ${path}` });
      }
    })();
    try {
      return await opening;
    } catch (error) {
      opening = undefined;
      throw error;
    }
  };

  const run = async <T>(operation: string, fn: (handle: SqliteHandle) => T): Promise<T> => {
    const handle = await open();
    try {
      return fn(handle);
    } catch (cause) {
      throw toSandboxError(cause, { operation: `sqlite store ${operation}` });
    }
  };

  return {
    kind: "sqlite",
    async init() {
      await open();
    },
    async insert(record, entry) {
      assertWritable(undefined, record, entry.version);
      const inserted = await run("insert", (handle) =>
        handle.insertWithHistory.immediate(toRow(record), historyParams(entry)),
      );
      if (!inserted)
        throw new SandboxError("Conflict", `record ${record.id} already exists`, { retryable: false });
    },
    async get(id) {
      return run("get", (handle) => {
        const row = handle.get.get(id) as SandboxRow | undefined;
        return row ? fromRow(row) : undefined;
      });
    },
    async list(filter?: RecordFilter) {
      const normalized = normalizeFilter(filter);
      return run("list", (handle) => {
        const where = whereOf(normalized);
        const limit = normalized.limit === undefined ? "" : ` LIMIT ${normalized.limit}`;
        const rows = handle
          .query(`SELECT ${COLUMNS} FROM sbox_sandboxes ${where.sql} ORDER BY created_at, id${limit}`)
          .all(...where.params) as SandboxRow[];
        return rows.map(fromRow);
      });
    },
    async update(expectedVersion, next, entry) {
      assertWritable(expectedVersion, next, entry.version);
      return run("update", (handle) =>
        handle.updateWithHistory.immediate(
          { ...toRow(next), expected: expectedVersion },
          historyParams(entry),
        ),
      );
    },
    async history(id) {
      return run("history", (handle) => {
        const rows = handle.history.all(id) as HistoryRow[];
        return rows.map(
          (row): HistoryEntry => ({
            recordId: row.record_id,
            version: row.version,
            kind: row.kind as HistoryEntry["kind"],
            fromStatus: row.from_status as SandboxStatus | null,
            toStatus: row.to_status as SandboxStatus,
            actor: row.actor,
            at: new Date(row.at),
            detail: row.detail,
          }),
        );
      });
    },
    async close() {
      closed = true;
      const handle = opening ? await opening.catch(() => undefined) : undefined;
      opening = undefined;
      handle?.db.close();
    },
  };
}

/** Applies pending migrations in one IMMEDIATE transaction, so processes opening the file together serialize. */
function migrate(db: BetterSqlite3.Database): void {
  db.transaction(() => {
    db.exec(
      "CREATE TABLE IF NOT EXISTS sbox_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
    );
    const applied = new Set(
      (db.prepare("SELECT version FROM sbox_migrations").all() as { version: number }[]).map(
        (r) => r.version,
      ),
    );
    for (const migration of SQLITE_MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      db.exec(migration.sql);
      db.prepare("INSERT INTO sbox_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(
        migration.version,
        migration.name,
        Date.now(),
      );
    }
  }).immediate();
}
