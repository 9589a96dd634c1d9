import type { StoredSpec } from "./manager-spec.js";

/**
 * Where a managed sandbox is in its lifecycle. `creating`, `starting`, `stopping`, `resuming` and
 * `destroying` are transitional: a record in one of them carries a lease (owner + expiry), and only the
 * lease owner may move it on. The others are stable.
 */
export type SandboxStatus =
  | "creating"
  | "starting"
  | "running"
  | "stopping"
  | "stopped"
  | "resuming"
  | "destroying"
  | "destroyed"
  | "failed";

/** Every status, in lifecycle order. */
export const SANDBOX_STATUSES: readonly SandboxStatus[] = [
  "creating",
  "starting",
  "running",
  "stopping",
  "stopped",
  "resuming",
  "destroying",
  "destroyed",
  "failed",
];

/** The transitional statuses: a record in one of them is leased by the worker performing the transition. */
export const TRANSITIONAL_STATUSES: readonly SandboxStatus[] = [
  "creating",
  "starting",
  "stopping",
  "resuming",
  "destroying",
];

/** True when `status` is transitional (leased). */
export function isTransitional(status: SandboxStatus): boolean {
  return TRANSITIONAL_STATUSES.includes(status);
}

/** True when `value` is a known status. */
export function isSandboxStatus(value: unknown): value is SandboxStatus {
  return typeof value === "string" && (SANDBOX_STATUSES as readonly string[]).includes(value);
}

/** Who holds a transitional record, and until when. */
export interface RecordLease {
  /** The worker id of the manager performing the transition. */
  owner: string;
  /** After this instant the transition counts as abandoned and `reconcile` may settle it. */
  expiresAt: Date;
}

/** Why a record failed, or what went wrong in its last transition. Never contains a credential. */
export interface RecordError {
  /**
   * A `SandboxError` code, or `GitFailed` (the checkout failed), `SetupFailed` (a setup step exited
   * non-zero or timed out), `StartFailed` (the main process could not be started or exited at once),
   * `Abandoned` (a worker died mid-transition) or `Gone` (the provider no longer has the sandbox).
   */
  code: string;
  message: string;
  /** The setup step that failed: its index in `spec.setup` and its name. */
  step?: { index: number; name: string } | undefined;
  exitCode?: number | undefined;
  /** The last bytes of the step's combined output (redacted). */
  outputTail?: string | undefined;
  at: Date;
}

/** What the manager learned while provisioning: where things live inside the sandbox. */
export interface RecordRuntime {
  /** The sandbox's working directory (absolute), where relative spec paths resolve. */
  workdir?: string | undefined;
  /** Absolute path of the git checkout. */
  checkoutDir?: string | undefined;
  /** Process id of the `start` main process, as the provider reports it. */
  startPid?: number | undefined;
  /** Absolute path of the main process's log file inside the sandbox. */
  startLog?: string | undefined;
  /** Absolute path of the log of the checkout and the setup steps inside the sandbox. */
  setupLog?: string | undefined;
  /** Preview URLs of `spec.ports` (tokens of private previews are never stored). */
  urls?: Record<string, string> | undefined;
}

/** One managed sandbox, as stored. */
export interface SandboxRecord {
  /** The manager's id, e.g. `"sbx_0f3c..."`; stable for the record's whole life. */
  id: string;
  /** Incremented by every change; every write is a compare-and-set on it. */
  version: number;
  status: SandboxStatus;
  /** Key of the provider in the manager's `providers`. */
  provider: string;
  /** The sandbox id (`"<provider>:<native id>"`) once the provider created it. */
  sandboxId: string | null;
  ownerId: string | null;
  labels: Record<string, string>;
  metadata: Record<string, unknown>;
  /** The spec, with git credentials removed. */
  spec: StoredSpec;
  lease: RecordLease | null;
  error: RecordError | null;
  runtime: RecordRuntime;
  createdAt: Date;
  updatedAt: Date;
  /** When `stopExpired()` stops the sandbox; `null` for no expiry. */
  expiresAt: Date | null;
}

/** What kind of change a history entry describes. */
export type HistoryKind = "create" | "transition" | "lease" | "update" | "reconcile" | "adopt";

/**
 * One row of a record's history. The store writes it in the same transaction as the change it
 * describes, keyed by `(recordId, version)`: the history of a record is gap-free and in order.
 */
export interface HistoryEntry {
  recordId: string;
  /** The version the record got with this change. */
  version: number;
  kind: HistoryKind;
  /** Status before the change (`null` for the insert). */
  fromStatus: SandboxStatus | null;
  toStatus: SandboxStatus;
  /** Worker id of the manager that made the change. */
  actor: string;
  at: Date;
  /** Short redacted note: the operation, or why reconcile changed the record. */
  detail: string | null;
}

/** Which records `list` and `find` return. Every field narrows; all given fields must match. */
export interface RecordFilter {
  /** Only these record ids. */
  ids?: readonly string[] | undefined;
  ownerId?: string | undefined;
  /** Every listed label must be present with this value. */
  labels?: Readonly<Record<string, string>> | undefined;
  status?: SandboxStatus | readonly SandboxStatus[] | undefined;
  provider?: string | undefined;
  sandboxId?: string | undefined;
  /** Only records whose `expiresAt` is at or before this instant. */
  expiresBefore?: Date | undefined;
  /** At most this many records (ordered by creation time, then id). */
  limit?: number | undefined;
}
