import { type SandboxError, type SandboxInfo, type SandboxState, toSandboxError } from "@sbox/core";
import { LeaseKeeper } from "./lease-keeper.js";
import type { ManagerInternals } from "./manager-internals.js";
import { NAMESPACE_LABEL, RECORD_LABEL } from "./manager-labels.js";
import { prepareStart } from "./prepare-spec.js";
import { isMainRunning, ProvisionFailure, startMain } from "./provision.js";
import { RECORD_ID_PATTERN } from "./record-validation.js";
import { type RecordChanges, writeRecord } from "./record-writer.js";
import { withFreshUrls } from "./refresh-urls.js";
import {
  isTransitional,
  SANDBOX_STATUSES,
  type SandboxRecord,
  type SandboxStatus,
} from "./sandbox-record.js";

/** One record whose status `reconcile` changed. */
export interface ReconcileChange {
  id: string;
  from: SandboxStatus;
  to: SandboxStatus;
  /** Why, in words (also written to the record's history). */
  detail: string;
}

/** What `reconcile` did. */
export interface ReconcileReport {
  /** Abandoned transitions (expired leases) settled. */
  settled: ReconcileChange[];
  /** Stable records changed to match what the provider reports. */
  aligned: ReconcileChange[];
  /** Sandboxes found by the manager's label whose record did not exist: now recorded. */
  adopted: { id: string; sandboxId: string; status: SandboxStatus }[];
  /** Sandboxes destroyed because their record says they must not exist (destroyed, failed, abandoned create). */
  destroyed: { id: string; sandboxId: string; reason: string }[];
  /** Records that could not be checked; the rest of the run went on. */
  errors: { id: string; error: SandboxError }[];
}

/** The record status a provider state implies; undefined when it says nothing certain. */
export function statusForState(state: SandboxState): SandboxStatus | undefined {
  switch (state) {
    case "running":
    case "starting":
      return "running";
    case "paused":
    case "stopped":
      return "stopped";
    case "destroyed":
      return "destroyed";
    case "error":
      return "failed";
    default:
      return undefined;
  }
}

/** Live provider state of a record's sandbox: `"missing"` when the provider has no such sandbox. */
async function probe(internals: ManagerInternals, record: SandboxRecord): Promise<SandboxState | "missing"> {
  if (!record.sandboxId) return "missing";
  try {
    const sandbox = await internals.sandboxOf(record);
    return (await sandbox.getInfo()).state;
  } catch (error) {
    const wrapped = toSandboxError(error);
    if (wrapped.code === "NotFound") return "missing";
    throw wrapped;
  }
}

async function listByLabels(
  internals: ManagerInternals,
  providerKey: string,
  metadata: Record<string, string>,
): Promise<SandboxInfo[]> {
  const client = internals.clientOf(providerKey);
  if (client.capabilities.map.list === "unsupported") return [];
  const found: SandboxInfo[] = [];
  for await (const info of client.list({ metadata })) found.push(info);
  return found;
}

async function destroySandbox(
  internals: ManagerInternals,
  providerKey: string,
  sandboxId: string,
): Promise<void> {
  try {
    const sandbox = await internals.clientOf(providerKey).connect(sandboxId);
    await sandbox.destroy();
  } catch (error) {
    const wrapped = toSandboxError(error);
    if (wrapped.code !== "NotFound") throw wrapped;
  }
}

/**
 * Settles one record whose lease expired: takes the lease over (a compare-and-set, so two reconcilers
 * never settle the same record), finds out what really happened at the provider, and moves the record to
 * the stable status that matches. An abandoned create is never finished: its sandbox (found by id or by
 * label) is destroyed and the record marked `failed` (`Abandoned`). Returns undefined when someone else
 * changed the record first.
 */
export async function settleRecord(
  internals: ManagerInternals,
  record: SandboxRecord,
  report?: ReconcileReport,
): Promise<ReconcileChange | undefined> {
  if (!isTransitional(record.status) || !internals.leaseExpired(record)) return undefined;
  const previousOwner = record.lease?.owner ?? "(none)";
  const leaseMs = internals.leaseMs;
  const takeover = await writeRecord(
    internals.writer,
    record,
    {
      lease: {
        owner: internals.writer.actor,
        expiresAt: new Date(internals.writer.now().getTime() + leaseMs),
      },
    },
    "reconcile",
    `took over the abandoned ${record.status} of worker ${previousOwner}`,
  );
  if (!takeover) return undefined;
  const keeper = new LeaseKeeper(internals.writer, takeover, leaseMs);
  const at = internals.writer.now();
  try {
    let changes: RecordChanges;
    let detail: string;
    switch (record.status) {
      case "creating":
      case "starting": {
        let sandboxId = record.sandboxId;
        if (!sandboxId) {
          const found = await listByLabels(internals, record.provider, { [RECORD_LABEL]: record.id });
          for (const extra of found.slice(1)) {
            await destroySandbox(internals, record.provider, extra.id);
            report?.destroyed.push({ id: record.id, sandboxId: extra.id, reason: "abandoned create" });
          }
          sandboxId = found[0]?.id ?? null;
        }
        if (sandboxId) {
          await destroySandbox(internals, record.provider, sandboxId);
          report?.destroyed.push({ id: record.id, sandboxId, reason: "abandoned create" });
        }
        detail = `worker ${previousOwner} abandoned the ${record.status}; ${sandboxId ? `its sandbox ${sandboxId} was found and destroyed` : "no sandbox had been created"}`;
        changes = { status: "failed", sandboxId, error: { code: "Abandoned", message: detail, at } };
        break;
      }
      case "destroying": {
        if (record.sandboxId) await destroySandbox(internals, record.provider, record.sandboxId);
        internals.forget(record.id);
        detail = `worker ${previousOwner} abandoned the destroy; finished it`;
        changes = { status: "destroyed" };
        break;
      }
      default: {
        // stopping / resuming: the provider knows which side of the transition the sandbox is on.
        const state = await probe(internals, record);
        if (state === "missing") {
          detail = `worker ${previousOwner} abandoned the ${record.status}; the provider no longer has the sandbox`;
          changes = { status: "destroyed", error: { code: "Gone", message: detail, at } };
          internals.forget(record.id);
          break;
        }
        const status = statusForState(state) ?? (record.status === "stopping" ? "running" : "stopped");
        detail = `worker ${previousOwner} abandoned the ${record.status}; the provider reports ${state}`;
        changes = { status };
        if (status === "running" && record.runtime.urls) {
          changes.runtime = await withFreshUrls(await internals.sandboxOf(record), record.runtime);
        }
        if (status === "running" && record.spec.start) {
          const sandbox = await internals.sandboxOf(record);
          if (!(await isMainRunning(sandbox, record.runtime.startPid))) {
            try {
              const startPid = await startMain(sandbox, prepareStart(record.spec.start), record.runtime, {
                graceMs: internals.startGraceMs,
                secrets: [],
                defaultCwd: record.spec.git?.dir,
              });
              changes.runtime = { ...(changes.runtime ?? record.runtime), startPid };
              detail += "; restarted the main process";
            } catch (error) {
              const failure =
                error instanceof ProvisionFailure
                  ? error.detail
                  : { code: "StartFailed", message: String(error) };
              changes.error = { ...failure, at };
              detail += "; the main process could not be restarted";
            }
          }
        }
      }
    }
    await keeper.write({ ...changes, lease: null }, "reconcile", detail);
    const change: ReconcileChange = {
      id: record.id,
      from: record.status,
      to: changes.status ?? record.status,
      detail,
    };
    report?.settled.push(change);
    return change;
  } finally {
    await keeper.stop();
  }
}

/** Aligns one stable record with the provider's view. */
async function alignRecord(
  internals: ManagerInternals,
  record: SandboxRecord,
  listed: Map<string, SandboxInfo[]>,
  report: ReconcileReport,
): Promise<void> {
  const mine = listed.get(record.id) ?? [];
  if (record.status === "destroyed" || record.status === "failed") {
    // Such a record must not have a live sandbox: destroy what the provider still has.
    for (const info of mine) {
      if (info.state === "destroyed") continue;
      await destroySandbox(internals, record.provider, info.id);
      report.destroyed.push({ id: record.id, sandboxId: info.id, reason: `record is ${record.status}` });
    }
    return;
  }
  if (!record.sandboxId) return;
  let state: SandboxState | "missing";
  const seen = mine.find((info) => info.id === record.sandboxId);
  if (seen) state = seen.state;
  else state = await probe(internals, record); // listing may lag or be unsupported: ask the sandbox itself
  for (const info of mine) {
    if (info.id === record.sandboxId || info.state === "destroyed") continue;
    // A second sandbox carrying this record's label (a retried create): not the record's, destroy it.
    await destroySandbox(internals, record.provider, info.id);
    report.destroyed.push({ id: record.id, sandboxId: info.id, reason: "duplicate sandbox for the record" });
  }
  const at = internals.writer.now();
  let changes: RecordChanges | undefined;
  let detail = "";
  if (state === "missing") {
    detail = `the provider no longer has sandbox ${record.sandboxId}`;
    changes = { status: "destroyed", error: { code: "Gone", message: detail, at } };
    internals.forget(record.id);
  } else {
    const status = statusForState(state);
    if (status && status !== record.status) {
      detail = `the provider reports ${state}`;
      changes =
        status === "failed" ? { status, error: { code: "Provider", message: detail, at } } : { status };
    }
  }
  if (!changes) return;
  // The version read before asking the provider: if anyone changed the record meanwhile, leave it.
  const next = await writeRecord(internals.writer, record, changes, "reconcile", detail);
  if (next) report.aligned.push({ id: record.id, from: record.status, to: next.status, detail });
}

/** Runs `reconcile` (see `SandboxManager.reconcile`). */
export async function reconcileRecords(
  internals: ManagerInternals,
  ids?: readonly string[],
): Promise<ReconcileReport> {
  const report: ReconcileReport = { settled: [], aligned: [], adopted: [], destroyed: [], errors: [] };
  const fail = (id: string, error: unknown) => report.errors.push({ id, error: toSandboxError(error) });

  // Records first, provider state second: a record read before the provider answered is compared with a
  // view at least as new, and the compare-and-set drops the change if the record moved meanwhile.
  const records = ids
    ? await internals.store.list({ ids })
    : await internals.store.list({ status: SANDBOX_STATUSES.filter((status) => status !== "destroyed") });

  const settledIds = new Set<string>();
  for (const record of records) {
    if (!isTransitional(record.status) || !internals.leaseExpired(record)) continue;
    try {
      if (await settleRecord(internals, record, report)) settledIds.add(record.id);
    } catch (error) {
      fail(record.id, error);
    }
  }

  const listed = new Map<string, SandboxInfo[]>();
  const providerOf = new Map<string, string>();
  for (const key of internals.providerKeys()) {
    try {
      const infos = await listByLabels(internals, key, { [NAMESPACE_LABEL]: internals.namespace });
      for (const info of infos) {
        const recordId = info.metadata[RECORD_LABEL];
        if (!recordId) continue;
        listed.set(recordId, [...(listed.get(recordId) ?? []), info]);
        providerOf.set(info.id, key);
      }
    } catch (error) {
      fail(`provider:${key}`, error);
    }
  }

  const known = new Set(records.map((r) => r.id));
  for (const record of records) {
    if (settledIds.has(record.id) || isTransitional(record.status)) continue;
    try {
      await alignRecord(internals, record, listed, report);
    } catch (error) {
      fail(record.id, error);
    }
  }

  // Sandboxes carrying the manager's label whose record was not among those checked.
  for (const [recordId, infos] of listed) {
    if (known.has(recordId)) continue;
    if (ids && !ids.includes(recordId)) continue;
    try {
      const existing = await internals.store.get(recordId);
      if (existing) {
        if (existing.status === "destroyed") await alignRecord(internals, existing, listed, report);
        continue;
      }
      if (!RECORD_ID_PATTERN.test(recordId)) continue;
      const live = infos.filter((info) => info.state !== "destroyed");
      const [first, ...rest] = live;
      if (!first) continue;
      const providerKey = providerOf.get(first.id)!;
      for (const extra of rest) {
        await destroySandbox(internals, providerOf.get(extra.id)!, extra.id);
        report.destroyed.push({
          id: recordId,
          sandboxId: extra.id,
          reason: "duplicate sandbox for an unrecorded id",
        });
      }
      const status = statusForState(first.state) ?? "running";
      const at = internals.writer.now();
      const record: SandboxRecord = {
        id: recordId,
        version: 1,
        status,
        provider: providerKey,
        sandboxId: first.id,
        ownerId: null,
        labels: {},
        metadata: {},
        spec: {},
        lease: null,
        error: null,
        runtime: {},
        createdAt: first.createdAt ?? at,
        updatedAt: at,
        expiresAt: null,
      };
      const detail = `adopted sandbox ${first.id}, found by its ${RECORD_LABEL} label without a record`;
      const entry = {
        recordId,
        version: 1,
        kind: "adopt" as const,
        fromStatus: null,
        toStatus: status,
        actor: internals.writer.actor,
        at,
        detail,
      };
      try {
        await internals.store.insert(record, entry);
      } catch (error) {
        if (toSandboxError(error).code === "Conflict") continue;
        throw error;
      }
      internals.writer.onChange(entry, record);
      report.adopted.push({ id: recordId, sandboxId: first.id, status });
    } catch (error) {
      fail(recordId, error);
    }
  }
  return report;
}
