import type { Sandbox, SandboxClient } from "@sbox/core";
import type { WriterContext } from "./record-writer.js";
import type { SandboxRecord } from "./sandbox-record.js";
import type { SandboxStore } from "./sandbox-store.js";

/** What the manager shares with `reconcile`: its store, clock, clients and lease settings. */
export interface ManagerInternals {
  readonly writer: WriterContext;
  readonly store: SandboxStore;
  readonly leaseMs: number;
  readonly namespace: string;
  readonly startGraceMs: number;
  /** The keys of the manager's providers. */
  providerKeys(): string[];
  /** The client of a provider key; `Validation` for an unknown key. */
  clientOf(key: string): SandboxClient;
  /** The sandbox of a record (which must have a sandbox id); `NotFound` when the provider has none. */
  sandboxOf(record: SandboxRecord): Promise<Sandbox>;
  /** Drops cached connections of a record. */
  forget(recordId: string): void;
  /** Whether the record's lease has run out by the manager's clock. */
  leaseExpired(record: SandboxRecord): boolean;
}
