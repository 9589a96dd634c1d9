/**
 * Machine leases: an exclusive, expiring lock on changing a machine. `POST .../lease` takes one (or, with
 * the current nonce in `fly-machine-lease-nonce`, extends it); while it is held every change to the
 * machine — update, start, stop, restart, suspend, signal, cordon, destroy, metadata — must carry that
 * nonce, or it is refused with 409. `DELETE .../lease` with the nonce releases it; a lease also ends at
 * its expiry.
 */
import { randomBytes } from "node:crypto";
import type { EmulatorClock } from "../clock.js";

/** A held lease. */
export interface FlyLease {
  readonly nonce: string;
  readonly owner: string;
  readonly description: string;
  /** Unix seconds. */
  expiresAt: number;
  readonly version: string;
}

/** The header leases travel in. */
export const LEASE_NONCE_HEADER = "fly-machine-lease-nonce";

/** Default lease time to live, in seconds. */
export const DEFAULT_LEASE_TTL_S = 30;

/** The leases of one emulator, by machine id. */
export class FlyLeases {
  private readonly byMachine = new Map<string, FlyLease>();

  constructor(private readonly clock: EmulatorClock) {}

  /** The machine's lease, if one is held and not expired. */
  current(machineId: string): FlyLease | undefined {
    const lease = this.byMachine.get(machineId);
    if (lease && lease.expiresAt * 1000 <= this.clock.now()) {
      this.byMachine.delete(machineId);
      return undefined;
    }
    return lease;
  }

  /**
   * Takes or refreshes a lease: with the current nonce it is extended; without one (or with a nonce
   * that names no lease) a new one is made unless another is held, which is the conflict returned.
   */
  acquire(
    machineId: string,
    options: { ttl: number; description: string; owner: string; nonce?: string | undefined; version: string },
  ): { lease: FlyLease; created: boolean } | { conflict: FlyLease } {
    const held = this.current(machineId);
    const expiresAt = Math.floor(this.clock.now() / 1000) + options.ttl;
    if (held) {
      if (options.nonce !== undefined && options.nonce === held.nonce) {
        held.expiresAt = expiresAt;
        return { lease: held, created: false };
      }
      return { conflict: held };
    }
    const lease: FlyLease = {
      nonce: randomBytes(6).toString("hex"),
      owner: options.owner,
      description: options.description,
      expiresAt,
      version: options.version,
    };
    this.byMachine.set(machineId, lease);
    return { lease, created: true };
  }

  /** Releases the lease held with `nonce`; the message when that is not the machine's lease. */
  release(machineId: string, nonce: string | undefined): string | undefined {
    const held = this.current(machineId);
    if (!held) return undefined;
    if (nonce !== held.nonce) return `lease ${nonce ? "nonce does not match" : "nonce is required"}`;
    this.byMachine.delete(machineId);
    return undefined;
  }

  /** `undefined` when a change may go ahead, else the 409 message. */
  check(machineId: string, nonce: string | undefined): string | undefined {
    const held = this.current(machineId);
    if (!held || held.nonce === nonce) return undefined;
    const until = new Date(held.expiresAt * 1000).toISOString();
    return `machine ${machineId} is currently leased by ${held.owner} until ${until}${held.description ? ` (${held.description})` : ""}; send its nonce in the ${LEASE_NONCE_HEADER} header`;
  }

  /** Forgets a machine's lease (the machine is gone). */
  forget(machineId: string): void {
    this.byMachine.delete(machineId);
  }

  /**
   * The lease in both shapes clients read: the fields of the spec's `Lease` at the top level and fly-go's
   * `MachineLease` (`{ status, data }`) around them.
   */
  static describe(lease: FlyLease): Record<string, unknown> {
    const fields = {
      nonce: lease.nonce,
      owner: lease.owner,
      description: lease.description,
      expires_at: lease.expiresAt,
      version: lease.version,
    };
    return { ...fields, status: "success", data: fields };
  }
}
