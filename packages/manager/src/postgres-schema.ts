import type { StoreMigration } from "./sqlite-schema.js";

/**
 * The PostgreSQL schema, with `{{schema}}` standing for the quoted schema name. Instants are timestamptz;
 * labels, metadata, spec, error and runtime are jsonb (labels get a GIN index for `@>` queries).
 * `sbox_sandbox_history` gets one row per change, keyed by (record_id, version).
 */
export const POSTGRES_MIGRATIONS: readonly StoreMigration[] = [
  {
    version: 1,
    name: "sandboxes and history",
    sql: `
CREATE TABLE {{schema}}.sbox_sandboxes (
  id               text PRIMARY KEY,
  version          integer NOT NULL CHECK (version >= 1),
  status           text NOT NULL,
  provider         text NOT NULL,
  sandbox_id       text,
  owner_id         text,
  labels           jsonb NOT NULL DEFAULT '{}'::jsonb,
  metadata         jsonb NOT NULL DEFAULT '{}'::jsonb,
  spec             jsonb NOT NULL DEFAULT '{}'::jsonb,
  lease_owner      text,
  lease_expires_at timestamptz,
  error            jsonb,
  runtime          jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  expires_at       timestamptz
);
CREATE INDEX sbox_sandboxes_status ON {{schema}}.sbox_sandboxes (status);
CREATE INDEX sbox_sandboxes_owner ON {{schema}}.sbox_sandboxes (owner_id);
CREATE INDEX sbox_sandboxes_sandbox_id ON {{schema}}.sbox_sandboxes (sandbox_id);
CREATE INDEX sbox_sandboxes_expires ON {{schema}}.sbox_sandboxes (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX sbox_sandboxes_created ON {{schema}}.sbox_sandboxes (created_at, id);
CREATE INDEX sbox_sandboxes_labels ON {{schema}}.sbox_sandboxes USING gin (labels jsonb_path_ops);
CREATE TABLE {{schema}}.sbox_sandbox_history (
  record_id   text NOT NULL,
  version     integer NOT NULL,
  kind        text NOT NULL,
  from_status text,
  to_status   text NOT NULL,
  actor       text NOT NULL,
  at          timestamptz NOT NULL,
  detail      text,
  PRIMARY KEY (record_id, version)
);
`,
  },
];
