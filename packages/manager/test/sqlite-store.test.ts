import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sqliteStore } from "../src/sqlite-store.js";
import { entryFor, makeRecord, storeSuite } from "./store-suite.js";

storeSuite("sqlite", {
  async fresh() {
    const dir = mkdtempSync(join(tmpdir(), "sbox-manager-sqlite-"));
    const path = join(dir, "nested", "manager.db");
    const opened = [sqliteStore({ path })];
    return {
      store: opened[0]!,
      another: () => {
        const store = sqliteStore({ path });
        opened.push(store);
        return store;
      },
      cleanup: async () => {
        for (const store of opened) await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
});

describe("sqliteStore specifics", () => {
  it("defaults to $SBOX_HOME/manager.db, creates the directory, and runs in WAL mode", async () => {
    const home = mkdtempSync(join(tmpdir(), "sbox-home-"));
    const previous = process.env.SBOX_HOME;
    process.env.SBOX_HOME = join(home, "deeper");
    try {
      const store = sqliteStore();
      const record = makeRecord();
      await store.insert(record, entryFor(record, null));
      await store.close();
      expect(existsSync(join(home, "deeper", "manager.db"))).toBe(true);
      expect(
        existsSync(join(home, "deeper", "manager.db-wal")) ||
          statSync(join(home, "deeper", "manager.db")).size > 0,
      ).toBe(true);
      const reopened = sqliteStore();
      expect(await reopened.get(record.id)).toEqual(record);
      await reopened.close();
    } finally {
      if (previous === undefined) delete process.env.SBOX_HOME;
      else process.env.SBOX_HOME = previous;
      rmSync(home, { recursive: true, force: true });
    }
  });

  it("keeps data across reopening and applies migrations once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sbox-manager-sqlite-"));
    try {
      const path = join(dir, "m.db");
      const first = sqliteStore({ path });
      const record = makeRecord();
      await first.insert(record, entryFor(record, null));
      await first.close();
      const second = sqliteStore({ path });
      await second.init();
      expect(await second.get(record.id)).toEqual(record);
      await second.close();
      const { default: Database } = (await import("better-sqlite3")) as unknown as {
        default: typeof import("better-sqlite3");
      };
      const db = new Database(path, { readonly: true });
      expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(db.prepare("SELECT version, name FROM sbox_migrations").all()).toEqual([
        { version: 1, name: "sandboxes and history" },
      ]);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reports an unusable path as a SandboxError", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sbox-manager-sqlite-"));
    try {
      // A regular file where a directory should be.
      writeFileSync(join(dir, "file"), "");
      const store = sqliteStore({ path: join(dir, "file", "manager.db") });
      await expect(store.init()).rejects.toMatchObject({ name: "SandboxError" });
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
