import { SandboxError } from "@sbox/core";
import { type RecordChanges, type WriterContext, writeRecord } from "./record-writer.js";
import type { HistoryKind, SandboxRecord } from "./sandbox-record.js";

/**
 * Holds the lease of a record in a transitional status while the transition runs: renews it every third
 * of its duration (a compare-and-set like any other write), and serializes renewals with the
 * transition's own writes so each write starts from the latest version. If a write finds the version
 * moved, the lease was taken over (by `reconcile`, after it expired): the transition must stop.
 */
export class LeaseKeeper {
  #current: SandboxRecord;
  #lost = false;
  #chain: Promise<unknown> = Promise.resolve();
  readonly #timer: ReturnType<typeof setInterval>;
  readonly #context: WriterContext;
  readonly #leaseMs: number;

  constructor(context: WriterContext, record: SandboxRecord, leaseMs: number) {
    this.#context = context;
    this.#current = record;
    this.#leaseMs = leaseMs;
    this.#timer = setInterval(
      () => {
        void this.#serialize(() => this.#renew()).catch(() => {});
      },
      Math.max(10, Math.floor(leaseMs / 3)),
    );
    this.#timer.unref();
  }

  /** The record as last written by this keeper. */
  get current(): SandboxRecord {
    return this.#current;
  }

  /** A fresh lease for this worker, starting now. */
  lease(): { owner: string; expiresAt: Date } {
    return { owner: this.#context.actor, expiresAt: new Date(this.#context.now().getTime() + this.#leaseMs) };
  }

  #serialize<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(work, work);
    this.#chain = run.catch(() => {});
    return run;
  }

  async #renew(): Promise<void> {
    if (this.#lost) return;
    const next = await writeRecord(
      this.#context,
      this.#current,
      { lease: this.lease() },
      "lease",
      "lease renewed",
    );
    if (next) this.#current = next;
    else this.#lost = true;
  }

  /**
   * Writes changes (keeping or replacing the lease as `changes` says). Throws `Conflict` when the lease
   * was lost: someone else owns the record now.
   */
  write(changes: RecordChanges, kind: HistoryKind, detail: string | null): Promise<SandboxRecord> {
    return this.#serialize(async () => {
      const next = this.#lost
        ? undefined
        : await writeRecord(this.#context, this.#current, changes, kind, detail);
      if (!next) {
        this.#lost = true;
        throw new SandboxError(
          "Conflict",
          `sandbox record ${this.#current.id}: this worker's lease on the ${this.#current.status} transition was taken over (it expired); the record is no longer changed by this call`,
          { retryable: false },
        );
      }
      this.#current = next;
      return next;
    });
  }

  /** Stops renewing; waits for a renewal in flight. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#chain;
  }
}
