/** One schema step; applied once, recorded in `sbox_migrations`. */
export interface StoreMigration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/**
 * The SQLite schema. Instants are epoch milliseconds (INTEGER); labels, metadata, spec, error and runtime
 * are JSON text. `sbox_sandbox_history` gets one row per change, keyed by (record_id, version).
 */
export const SQLITE_MIGRATIONS: readonly StoreMigration[] = [
  {
    version: 1,
    name: "sandboxes and history",
    sql: `
CREATE TABLE sbox_sandboxes (
  id               TEXT PRIMARY KEY,
  version          INTEGER NOT NULL CHECK (version >= 1),
  status           TEXT NOT NULL,
  provider         TEXT NOT NULL,
  sandbox_id       TEXT,
  owner_id         TEXT,
  labels           TEXT NOT NULL DEFAULT '{}',
  metadata         TEXT NOT NULL DEFAULT '{}',
  spec             TEXT NOT NULL DEFAULT '{}',
  lease_owner      TEXT,
  lease_expires_at INTEGER,
  error            TEXT,
  runtime          TEXT NOT NULL DEFAULT '{}',
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL,
  expires_at       INTEGER
);
CREATE INDEX sbox_sandboxes_status ON sbox_sandboxes (status);
CREATE INDEX sbox_sandboxes_owner ON sbox_sandboxes (owner_id);
CREATE INDEX sbox_sandboxes_sandbox_id ON sbox_sandboxes (sandbox_id);
CREATE INDEX sbox_sandboxes_expires ON sbox_sandboxes (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX sbox_sandboxes_created ON sbox_sandboxes (created_at, id);
CREATE TABLE sbox_sandbox_history (
  record_id   TEXT NOT NULL,
  version     INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  from_status TEXT,
  to_status   TEXT NOT NULL,
  actor       TEXT NOT NULL,
  at          INTEGER NOT NULL,
  detail      TEXT,
  PRIMARY KEY (record_id, version)
);
`,
  },
];
