import { optionalPackageError, SandboxError, toSandboxError } from "@sbox/core/spec";
import { POSTGRES_MIGRATIONS } from "./postgres-schema.js";
import { decodeRecordError, encodeRecordError } from "./record-codec.js";
import { assertWritable, type NormalizedFilter, normalizeFilter } from "./record-filter.js";
import type { HistoryEntry, RecordFilter, SandboxRecord, SandboxStatus } from "./sandbox-record.js";
import type { SandboxStore } from "./sandbox-store.js";

/** The part of a `pg` query result the store reads. */
export interface PgQueryResultLike {
  rows: Record<string, unknown>[];
  rowCount: number | null;
}

/** A connection checked out of a pool (`pg.PoolClient` fits). */
export interface PgClientLike {
  query(text: string, values?: unknown[]): Promise<PgQueryResultLike>;
  release(error?: Error | boolean): void;
}

/** A connection pool (`pg.Pool` fits). */
export interface PgPoolLike {
  query(text: string, values?: unknown[]): Promise<PgQueryResultLike>;
  connect(): Promise<PgClientLike>;
  end(): Promise<void>;
}

/** Options of {@link postgresStore}: a connection string (the store owns its pool) or your own pool. */
export type PostgresStoreOptions = (
  | { connectionString: string; pool?: undefined; maxConnections?: number | undefined }
  | { pool: PgPoolLike; connectionString?: undefined }
) & {
  /** Schema holding the tables, created when missing (default `"public"`). Lowercase letters, digits, `_`. */
  schema?: string | undefined;
};

const COLUMNS =
  "id, version, status, provider, sandbox_id, owner_id, labels, metadata, spec, lease_owner, lease_expires_at, error, runtime, created_at, updated_at, expires_at";

function recordParams(record: SandboxRecord): unknown[] {
  return [
    record.id,
    record.version,
    record.status,
    record.provider,
    record.sandboxId,
    record.ownerId,
    JSON.stringify(record.labels),
    JSON.stringify(record.metadata),
    JSON.stringify(record.spec),
    record.lease?.owner ?? null,
    record.lease?.expiresAt ?? null,
    record.error ? JSON.stringify(encodeRecordError(record.error)) : null,
    JSON.stringify(record.runtime),
    record.createdAt,
    record.updatedAt,
    record.expiresAt,
  ];
}

function historyParams(entry: HistoryEntry): unknown[] {
  return [
    entry.recordId,
    entry.version,
    entry.kind,
    entry.fromStatus,
    entry.toStatus,
    entry.actor,
    entry.at,
    entry.detail,
  ];
}

function asDate(value: unknown): Date {
  return value instanceof Date ? value : new Date(String(value));
}

function fromRow(row: Record<string, unknown>): SandboxRecord {
  const leaseOwner = row.lease_owner as string | null;
  const leaseExpires = row.lease_expires_at;
  return {
    id: row.id as string,
    version: Number(row.version),
    status: row.status as SandboxStatus,
    provider: row.provider as string,
    sandboxId: (row.sandbox_id as string | null) ?? null,
    ownerId: (row.owner_id as string | null) ?? null,
    labels: row.labels as Record<string, string>,
    metadata: row.metadata as Record<string, unknown>,
    spec: row.spec as SandboxRecord["spec"],
    lease:
      leaseOwner !== null && leaseExpires !== null
        ? { owner: leaseOwner, expiresAt: asDate(leaseExpires) }
        : null,
    error: decodeRecordError(row.error),
    runtime: row.runtime as SandboxRecord["runtime"],
    createdAt: asDate(row.created_at),
    updatedAt: asDate(row.updated_at),
    expiresAt: row.expires_at === null ? null : asDate(row.expires_at),
  };
}

function whereOf(filter: NormalizedFilter): { sql: string; params: unknown[] } {
  const clauses: string[] = [];
  const params: unknown[] = [];
  const param = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  if (filter.ids) clauses.push(`id = ANY(${param(filter.ids)}::text[])`);
  if (filter.ownerId !== undefined) clauses.push(`owner_id = ${param(filter.ownerId)}`);
  if (filter.labels.length > 0)
    clauses.push(`labels @> ${param(JSON.stringify(Object.fromEntries(filter.labels)))}::jsonb`);
  if (filter.statuses) clauses.push(`status = ANY(${param(filter.statuses)}::text[])`);
  if (filter.provider !== undefined) clauses.push(`provider = ${param(filter.provider)}`);
  if (filter.sandboxId !== undefined) clauses.push(`sandbox_id = ${param(filter.sandboxId)}`);
  if (filter.expiresBefore !== undefined) {
    clauses.push(`expires_at IS NOT NULL AND expires_at <= ${param(filter.expiresBefore)}`);
  }
  return { sql: clauses.length > 0 ? `WHERE ${clauses.join(" AND ")}` : "", params };
}

function secretsOf(connectionString: string | undefined): string[] {
  if (!connectionString) return [];
  try {
    const password = new URL(connectionString).password;
    return password ? [decodeURIComponent(password)] : [];
  } catch {
    return [];
  }
}

/**
 * A store in PostgreSQL, for many workers on many machines. Migrations are applied on first use, under an
 * advisory lock so that workers starting together apply them once; each change is a single statement
 * (update + history insert), so a compare-and-set costs one round trip. `pg` is loaded on first use.
 */
export function postgresStore(options: PostgresStoreOptions): SandboxStore {
  const schema = options.schema ?? "public";
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new SandboxError("Validation", `postgres store: invalid schema name ${JSON.stringify(schema)}`, {
      retryable: false,
    });
  }
  if (
    !options.pool &&
    (typeof options.connectionString !== "string" || options.connectionString.length === 0)
  ) {
    throw new SandboxError("Validation", "postgres store: pass a connectionString or a pool", {
      retryable: false,
    });
  }
  const secrets = secretsOf(options.connectionString);
  const q = `"${schema}"`;
  const table = `${q}.sbox_sandboxes`;
  const history = `${q}.sbox_sandbox_history`;
  let opening: Promise<PgPoolLike> | undefined;
  let closed = false;

  const wrap = (cause: unknown, operation: string): SandboxError =>
    toSandboxError(cause, { operation: `postgres store ${operation}`, secrets });

  const open = async (): Promise<PgPoolLike> => {
    if (closed) throw new SandboxError("InvalidState", "postgres store is closed", { retryable: false });
    opening ??= (async () => {
      let pool: PgPoolLike;
      if (options.pool) pool = options.pool;
      else {
        let Pool: typeof import("pg").Pool;
        try {
          Pool = (await import("pg")).default.Pool;
        } catch (cause) {
          // An optional peer: only the PostgreSQL store needs it.
          throw optionalPackageError(cause, "pg", "the postgres store of @sbox/manager");
        }
        const created = new Pool({
          connectionString: options.connectionString,
          max: options.maxConnections ?? 10,
        });
        // An idle client losing its connection must not crash the process; the next query reconnects.
        created.on("error", () => {});
        pool = created as unknown as PgPoolLike;
      }
      try {
        await migrate(pool, schema);
      } catch (cause) {
        if (!options.pool) await pool.end().catch(() => {});
        throw wrap(cause, "migrate");
      }
      return pool;
    })();
    try {
      return await opening;
    } catch (error) {
      opening = undefined;
      throw error;
    }
  };

  const query = async (operation: string, text: string, values: unknown[]): Promise<PgQueryResultLike> => {
    const pool = await open();
    try {
      return await pool.query(text, values);
    } catch (cause) {
      throw wrap(cause, operation);
    }
  };

  const valuesList = (from: number, count: number): string =>
    Array.from({ length: count }, (_, i) => `$${from + i}`).join(", ");

  return {
    kind: "postgres",
    async init() {
      await open();
    },
    async insert(record, entry) {
      assertWritable(undefined, record, entry.version);
      const result = await query(
        "insert",
        `WITH inserted AS (
           INSERT INTO ${table} (${COLUMNS}) VALUES (${valuesList(1, 16)})
           ON CONFLICT (id) DO NOTHING RETURNING id
         )
         INSERT INTO ${history} (record_id, version, kind, from_status, to_status, actor, at, detail)
         SELECT ${valuesList(17, 8)} FROM inserted`,
        [...recordParams(record), ...historyParams(entry)],
      );
      if (result.rowCount !== 1) {
        throw new SandboxError("Conflict", `record ${record.id} already exists`, { retryable: false });
      }
    },
    async get(id) {
      const result = await query("get", `SELECT ${COLUMNS} FROM ${table} WHERE id = $1`, [id]);
      const row = result.rows[0];
      return row ? fromRow(row) : undefined;
    },
    async list(filter?: RecordFilter) {
      const normalized = normalizeFilter(filter);
      const where = whereOf(normalized);
      const limit = normalized.limit === undefined ? "" : ` LIMIT ${normalized.limit}`;
      const result = await query(
        "list",
        `SELECT ${COLUMNS} FROM ${table} ${where.sql} ORDER BY created_at, id${limit}`,
        where.params,
      );
      return result.rows.map(fromRow);
    },
    async update(expectedVersion, next, entry) {
      assertWritable(expectedVersion, next, entry.version);
      // One statement: the row lock taken by UPDATE makes a concurrent writer re-check `version` after we
      // commit, so exactly one of two writers holding the same version succeeds.
      const result = await query(
        "update",
        `WITH updated AS (
           UPDATE ${table} SET version = $2, status = $3, provider = $4, sandbox_id = $5, owner_id = $6,
             labels = $7, metadata = $8, spec = $9, lease_owner = $10, lease_expires_at = $11, error = $12,
             runtime = $13, created_at = $14, updated_at = $15, expires_at = $16
           WHERE id = $1 AND version = $17 RETURNING id
         )
         INSERT INTO ${history} (record_id, version, kind, from_status, to_status, actor, at, detail)
         SELECT ${valuesList(18, 8)} FROM updated`,
        [...recordParams(next), expectedVersion, ...historyParams(entry)],
      );
      return result.rowCount === 1;
    },
    async history(id) {
      const result = await query(
        "history",
        `SELECT record_id, version, kind, from_status, to_status, actor, at, detail FROM ${history} WHERE record_id = $1 ORDER BY version`,
        [id],
      );
      return result.rows.map(
        (row): HistoryEntry => ({
          recordId: row.record_id as string,
          version: Number(row.version),
          kind: row.kind as HistoryEntry["kind"],
          fromStatus: (row.from_status as SandboxStatus | null) ?? null,
          toStatus: row.to_status as SandboxStatus,
          actor: row.actor as string,
          at: asDate(row.at),
          detail: (row.detail as string | null) ?? null,
        }),
      );
    },
    async close() {
      closed = true;
      const pool = opening ? await opening.catch(() => undefined) : undefined;
      opening = undefined;
      if (pool && !options.pool) await pool.end();
    },
  };
}

/** Applies pending migrations in one transaction holding an advisory lock keyed by the schema name. */
async function migrate(pool: PgPoolLike, schema: string): Promise<void> {
  const client = await pool.connect();
  let failed: Error | undefined;
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`sbox-manager-migrations:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS "${schema}".sbox_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const applied = await client.query(`SELECT version FROM "${schema}".sbox_migrations`);
    const done = new Set(applied.rows.map((r) => Number(r.version)));
    for (const migration of POSTGRES_MIGRATIONS) {
      if (done.has(migration.version)) continue;
      await client.query(migration.sql.replaceAll("{{schema}}", `"${schema}"`));
      await client.query(`INSERT INTO "${schema}".sbox_migrations (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ]);
    }
    await client.query("COMMIT");
  } catch (error) {
    failed = error instanceof Error ? error : new Error(String(error));
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release(failed);
  }
}
