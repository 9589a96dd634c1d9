/**
 * Snapshots and forks on the SDK's own calls. A Vercel snapshot is the sandbox's whole disk, and taking one
 * stops the session (`sandbox.snapshot()`); the sandbox's `currentSnapshotId` becomes the snapshot, so the
 * next session starts from it. sbox's snapshot leaves the sandbox running, so every call that snapshots
 * resumes the sandbox afterwards: its files are the snapshot's, its running commands are gone (Vercel keeps
 * no memory or processes — `flags.snapshotFilesystemOnly`).
 *
 * - `snapshots.create`: `sandbox.snapshot()`, then a new session from it.
 * - `snapshots.restore`: stop, `update({ currentSnapshotId })`, then a new session, which boots from it.
 * - `snapshots.list`: the sandbox's own snapshots (`sandbox.listSnapshots()`) that are still there.
 * - `snapshots.delete`: `Snapshot.get(...).delete()`.
 * - `fork`: Vercel forks from the source's current snapshot, not its live state, so the live state is
 *   snapshotted first; then `count` × `Sandbox.fork({ sourceSandbox })` (the server copies the source's
 *   config) and the source resumes.
 */
import { IDEMPOTENCY_KEY_METADATA_KEY } from "@sbox/core";
import type { DriverSandboxV1 as DriverSandbox, SnapshotRef } from "@sbox/core/spec";
import { SandboxError } from "@sbox/core/spec";
import { resumeSandbox, type VercelDriverSandbox } from "./vercel-lifecycle.js";
import { VERCEL_PROVIDER_NAME } from "./vercel-names.js";
import type { ResolvedVercelOptions } from "./vercel-options.js";
import { loadVercel, sdkParams, type VercelSandbox } from "./vercel-sdk.js";

/** How often a stopping session is looked at until it has stopped. */
const STOP_POLL_MS = 500;

/** The sbox reference of a Vercel snapshot (Vercel snapshots have no names; `name` is the caller's). */
function refOf(snapshot: { id: string; createdAt: number | Date }, name?: string | undefined): SnapshotRef {
  return {
    id: snapshot.id,
    createdAt: snapshot.createdAt instanceof Date ? snapshot.createdAt : new Date(snapshot.createdAt),
    ...(name === undefined ? {} : { name }),
  };
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", abort, { once: true });
  });
}

/**
 * Waits until the sandbox's session has left `stopping`/`snapshotting` (the service does both in the
 * background; the caller's signal bounds the wait), then starts a new session.
 */
async function resumeAfterStop(
  options: ResolvedVercelOptions,
  sandbox: VercelDriverSandbox,
  signal: AbortSignal,
): Promise<void> {
  const { Sandbox } = await loadVercel();
  for (;;) {
    const live = await Sandbox.get({ ...sdkParams(options, signal), name: sandbox.id });
    if (live.status !== "stopping" && live.status !== "snapshotting") break;
    await delay(STOP_POLL_MS, signal);
  }
  await resumeSandbox(options, sandbox, signal);
}

/** `snapshots.create`: a snapshot of the disk; the sandbox runs on from it (its commands do not). */
export async function createSnapshot(
  options: ResolvedVercelOptions,
  sandbox: VercelDriverSandbox,
  name: string | undefined,
  signal: AbortSignal,
): Promise<SnapshotRef> {
  const snapshot = await sandbox.native.snapshot({ signal });
  await resumeAfterStop(options, sandbox, signal);
  return refOf({ id: snapshot.snapshotId, createdAt: snapshot.createdAt }, name);
}

/**
 * `snapshots.restore`: the sandbox's next session boots from `ref`. The snapshot is looked up first, so an
 * unknown or deleted one is `NotFound` before anything is stopped.
 */
export async function restoreSnapshot(
  options: ResolvedVercelOptions,
  sandbox: VercelDriverSandbox,
  ref: SnapshotRef,
  signal: AbortSignal,
): Promise<void> {
  const { Snapshot } = await loadVercel();
  const snapshot = await Snapshot.get({ ...sdkParams(options, signal), snapshotId: ref.id });
  if (snapshot.status !== "created") throw notFound(ref.id);
  // Stopped first: a persistent sandbox's stop takes a snapshot of its own and makes it the current one.
  if (sandbox.native.status === "running" || sandbox.native.status === "pending") {
    await sandbox.native.stop({ signal });
  }
  await sandbox.native.update({ currentSnapshotId: ref.id }, { signal });
  await resumeAfterStop(options, sandbox, signal);
}

function notFound(id: string): SandboxError {
  return new SandboxError("NotFound", `vercel snapshots: no snapshot ${id}`, {
    provider: VERCEL_PROVIDER_NAME,
    retryable: false,
  });
}

/** `snapshots.list`: this sandbox's snapshots that still exist, newest first. */
export async function listSnapshots(
  sandbox: VercelDriverSandbox,
  signal: AbortSignal,
): Promise<SnapshotRef[]> {
  const pages = await sandbox.native.listSnapshots({ signal, sortOrder: "desc" });
  const refs: SnapshotRef[] = [];
  for await (const snapshot of pages as AsyncIterable<{ id: string; status: string; createdAt: number }>) {
    if (snapshot.status === "created") refs.push(refOf(snapshot));
  }
  return refs;
}

/** `snapshots.delete`: an unknown or already deleted snapshot is `NotFound`. */
export async function deleteSnapshot(
  options: ResolvedVercelOptions,
  ref: SnapshotRef,
  signal: AbortSignal,
): Promise<void> {
  const { Snapshot } = await loadVercel();
  const snapshot = await Snapshot.get({ ...sdkParams(options, signal), snapshotId: ref.id });
  if (snapshot.status !== "created") throw notFound(ref.id);
  await snapshot.delete({ signal });
}

/**
 * `fork`: `count` new sandboxes with the source's files as they are now, all or nothing (forks that did
 * start are deleted when one fails). They carry the source's config and tags, except the idempotency key of
 * the source's create (a fork is not what that create made).
 */
export async function forkSandbox(
  options: ResolvedVercelOptions,
  sandbox: VercelDriverSandbox,
  count: number,
  signal: AbortSignal,
): Promise<DriverSandbox<VercelSandbox>[]> {
  const { Sandbox } = await loadVercel();
  const { [IDEMPOTENCY_KEY_METADATA_KEY]: _key, ...tags } = sandbox.native.tags ?? {};
  await sandbox.native.snapshot({ signal });
  let forked: DriverSandbox<VercelSandbox>[];
  try {
    const results = await Promise.allSettled(
      Array.from({ length: count }, () =>
        Sandbox.fork({ ...sdkParams(options, signal), sourceSandbox: sandbox.id, tags }),
      ),
    );
    const made = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) {
      await Promise.allSettled(made.map((fork) => fork.delete()));
      throw failed.reason;
    }
    forked = made.map((fork) => ({ id: fork.name, native: fork }));
  } catch (error) {
    // The fork's failure is what the caller needs to hear; the source is resumed all the same.
    await resumeAfterStop(options, sandbox, signal).catch(() => undefined);
    throw error;
  }
  await resumeAfterStop(options, sandbox, signal);
  return forked;
}
