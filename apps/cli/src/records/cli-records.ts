import { createHash } from "node:crypto";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import type { SandboxProvider } from "@sbox/core";
import type { SandboxManager, SandboxRecord, SandboxStore } from "@sbox/manager";
import type { CliIo } from "../cli-io.js";
import { importOptionalPackage } from "../providers/import-package.js";

/**
 * Durable records of the sandboxes the CLI makes, kept by `@sbox/manager` in its SQLite store under
 * `SBOX_HOME`: `sbox create` records owner and labels, `rm`/`stop`/`resume` go through the record's leased
 * transitions, and `sbox reap` runs `stopExpired` + `reconcile`. Optional: when the manager (or its native
 * SQLite module) is not installed, or `SBOX_RECORDS=0`, the CLI works on the providers directly.
 */
export interface CliRecords {
  /** A manager over the given providers (by provider name), sharing one store. */
  manager(providers: Readonly<Record<string, SandboxProvider>>): SandboxManager;
  /** The live (not destroyed) record of a sandbox id, if the CLI recorded it. */
  recordOf(sandboxId: string): Promise<SandboxRecord | undefined>;
  /** Records, newest last. */
  list(): Promise<SandboxRecord[]>;
  close(): Promise<void>;
}

interface ManagerModule {
  SandboxManager: new (options: ConstructorParameters<typeof SandboxManager>[0]) => SandboxManager;
  sqliteStore(options?: { path?: string | undefined }): SandboxStore;
}

/** Opens the records, or resolves undefined when they are off or unavailable (with a reason for --debug). */
export async function openRecords(io: CliIo): Promise<{ records?: CliRecords; reason?: string }> {
  const setting = io.env.SBOX_RECORDS?.trim().toLowerCase();
  if (setting === "0" || setting === "off" || setting === "false") return { reason: "SBOX_RECORDS=0" };
  const outcome = await importOptionalPackage("@sbox/manager", io.cwd);
  if (outcome.status === "missing") return { reason: "@sbox/manager is not installed" };
  if (outcome.status === "broken") return { reason: outcome.error.message };
  const module = outcome.module as unknown as ManagerModule;
  if (typeof module.SandboxManager !== "function" || typeof module.sqliteStore !== "function") {
    return { reason: "@sbox/manager has no SandboxManager/sqliteStore" };
  }
  const home =
    io.env.SBOX_HOME && io.env.SBOX_HOME.trim() !== "" ? io.env.SBOX_HOME : join(homedir(), ".sbox");
  const databasePath = resolve(home, "manager.db");
  // One namespace per record store: `reconcile` adopts unrecorded sandboxes of its namespace, and must
  // never adopt those of another SBOX_HOME (or another manager) on a shared backend such as a Docker Engine.
  const namespace = `sbox-cli-${createHash("sha256").update(databasePath).digest("hex").slice(0, 16)}`;
  let store: SandboxStore;
  try {
    // The path is given explicitly so that io.env (not process.env) decides where records live.
    store = module.sqliteStore({ path: databasePath });
    // Opening is lazy in the store; a query proves the native module and the file work.
    await store.list({ limit: 1 });
  } catch (error) {
    return {
      reason: `the record store could not be opened: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  const managers: SandboxManager[] = [];
  const records: CliRecords = {
    manager(providers) {
      const manager = new module.SandboxManager({ providers, store, namespace });
      managers.push(manager);
      return manager;
    },
    async recordOf(sandboxId) {
      const found = await store.list({ sandboxId });
      return found.find((record) => record.status !== "destroyed");
    },
    list() {
      return store.list({});
    },
    async close() {
      for (const manager of managers.splice(0)) await manager.close().catch(() => {});
      await store.close().catch(() => {});
    },
  };
  return { records };
}
