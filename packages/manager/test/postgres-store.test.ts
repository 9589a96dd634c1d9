import { randomUUID } from "node:crypto";
import pg from "pg";
import { describe, expect, inject, it } from "vitest";
import { postgresStore } from "../src/postgres-store.js";
import type { SandboxStore } from "../src/sandbox-store.js";
import { entryFor, makeRecord, storeSuite } from "./store-suite.js";

const url = inject("postgresUrl");

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

describe.skipIf(!url)(`postgres (${url ? "real server" : inject("postgresMissing")})`, () => {
  storeSuite("postgres", {
    async fresh() {
      const schema = `t_${randomUUID().replaceAll("-", "")}`;
      const opened: SandboxStore[] = [postgresStore({ connectionString: url, schema })];
      return {
        store: opened[0]!,
        another: () => {
          const store = postgresStore({ connectionString: url, schema });
          opened.push(store);
          return store;
        },
        cleanup: async () => {
          for (const store of opened) await store.close();
          await dropSchema(schema);
        },
      };
    },
  });

  describe("postgresStore specifics", () => {
    it("applies migrations once when many stores start together, and records them", async () => {
      const schema = `t_${randomUUID().replaceAll("-", "")}`;
      const stores = Array.from({ length: 6 }, () => postgresStore({ connectionString: url, schema }));
      try {
        await Promise.all(stores.map((s) => s.init()));
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        const applied = await client.query(`SELECT version, name FROM "${schema}".sbox_migrations`);
        await client.end();
        expect(applied.rows).toEqual([{ version: 1, name: "sandboxes and history" }]);
      } finally {
        for (const store of stores) await store.close();
        await dropSchema(schema);
      }
    });

    it("works on a pool the caller owns and leaves it open", async () => {
      const schema = `t_${randomUUID().replaceAll("-", "")}`;
      const pool = new pg.Pool({ connectionString: url, max: 2 });
      try {
        const store = postgresStore({ pool, schema });
        const record = makeRecord();
        await store.insert(record, entryFor(record, null));
        await store.close();
        const rows = await pool.query(`SELECT id FROM "${schema}".sbox_sandboxes`);
        expect(rows.rows).toEqual([{ id: record.id }]);
      } finally {
        await dropSchema(schema);
        await pool.end();
      }
    });

    it("rejects an unsafe schema name and a missing connection with Validation", () => {
      expect(() => postgresStore({ connectionString: url, schema: 'x"; DROP SCHEMA public; --' })).toThrow(
        expect.objectContaining({ code: "Validation" }),
      );
      expect(() => postgresStore({ connectionString: "" })).toThrow(
        expect.objectContaining({ code: "Validation" }),
      );
    });

    it("reports an unreachable server as a SandboxError without the password", async () => {
      const store = postgresStore({ connectionString: "postgresql://user:hunter2secret@127.0.0.1:1/db" });
      const error = await store.init().then(
        () => undefined,
        (e: unknown) => e as Error & { code?: string },
      );
      expect(error?.name).toBe("SandboxError");
      expect(error?.message).not.toContain("hunter2secret");
      await store.close();
    });
  });
});
