import { mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { SnapshotRef } from "@sbox/core/spec";
import { localError } from "./local-errors.js";
import { closeQuietly, openDirectory } from "./local-fd-paths.js";
import { assertLocalId, newLocalId } from "./local-ids.js";
import { type LocalSandboxPaths, writeFileAtomic } from "./local-state.js";
import { copyDirectoryContent, emptyDirectory, type TreeOwner } from "./local-tree.js";

interface SnapshotMeta {
  readonly version: 1;
  readonly id: string;
  readonly name?: string | undefined;
  readonly createdAt: string;
}

/**
 * Copies the content of one existing directory into another (see `copyDirectoryContent`: symlinks as links,
 * never followed; sockets, FIFOs and devices skipped; modes and timestamps kept), every copy handed to `owner`.
 * Both directories are the provider's own (a workspace, a snapshot), so they are opened by path; everything
 * below them is walked by descriptor.
 */
export async function copyTree(from: string, to: string, owner: TreeOwner): Promise<void> {
  const source = await openDirectory(from);
  try {
    const target = await openDirectory(to);
    try {
      await copyDirectoryContent(source, target, owner);
    } finally {
      await closeQuietly(target);
    }
  } finally {
    await closeQuietly(source);
  }
}

function refOf(meta: SnapshotMeta): SnapshotRef {
  const ref: SnapshotRef = { id: meta.id, createdAt: new Date(meta.createdAt) };
  if (meta.name !== undefined) ref.name = meta.name;
  return ref;
}

function snapshotDir(paths: LocalSandboxPaths, id: string): string {
  return join(paths.snapshots, assertLocalId(id, "snapshot id"));
}

async function readMeta(dir: string): Promise<SnapshotMeta | undefined> {
  try {
    const meta = JSON.parse(await readFile(join(dir, "meta.json"), "utf8")) as SnapshotMeta;
    return meta.version === 1 ? meta : undefined;
  } catch {
    return undefined;
  }
}

/** Copies the workspace into a new snapshot (the filesystem only: no memory, no processes, not `/tmp`). */
export async function createSnapshot(
  paths: LocalSandboxPaths,
  name: string | undefined,
): Promise<SnapshotRef> {
  const id = newLocalId();
  const dir = snapshotDir(paths, id);
  await mkdir(join(dir, "workspace"), { recursive: true, mode: 0o700 });
  try {
    // Kept as this process's files: the snapshot is the provider's, and restore hands copies to the sandbox.
    await copyTree(paths.workspace, join(dir, "workspace"), undefined);
    const meta: SnapshotMeta = {
      version: 1,
      id,
      createdAt: new Date().toISOString(),
      ...(name === undefined ? {} : { name }),
    };
    // The meta file is written last: a snapshot without one is incomplete and never listed.
    await writeFileAtomic(join(dir, "meta.json"), JSON.stringify(meta));
    return refOf(meta);
  } catch (error) {
    await rm(dir, { recursive: true, force: true }).catch(() => {});
    throw error;
  }
}

/**
 * Replaces the workspace's content with the snapshot's, in place. The workspace is emptied and refilled
 * through descriptors, so a sandbox process racing the restore cannot make it write outside the workspace.
 */
export async function restoreSnapshot(
  paths: LocalSandboxPaths,
  ref: SnapshotRef,
  owner: TreeOwner,
): Promise<void> {
  const dir = snapshotDir(paths, ref?.id);
  if (!(await readMeta(dir))) throw localError("NotFound", `no snapshot ${ref.id}`);
  const workspace = await openDirectory(paths.workspace);
  try {
    await emptyDirectory(workspace);
  } finally {
    await closeQuietly(workspace);
  }
  await copyTree(join(dir, "workspace"), paths.workspace, owner);
}

/** Lists the snapshots of a sandbox, oldest first. */
export async function listSnapshots(paths: LocalSandboxPaths): Promise<SnapshotRef[]> {
  let names: string[];
  try {
    names = await readdir(paths.snapshots);
  } catch {
    return [];
  }
  const metas = await Promise.all(
    names.map(async (name) => {
      try {
        return await readMeta(snapshotDir(paths, name));
      } catch {
        return undefined;
      }
    }),
  );
  return metas
    .filter((meta): meta is SnapshotMeta => meta !== undefined)
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
    .map(refOf);
}

/** Deletes a snapshot; `NotFound` when there is none with that id. */
export async function deleteSnapshot(paths: LocalSandboxPaths, ref: SnapshotRef): Promise<void> {
  const dir = snapshotDir(paths, ref?.id);
  if (!(await readMeta(dir))) throw localError("NotFound", `no snapshot ${ref.id}`);
  await rm(dir, { recursive: true, force: true, maxRetries: 2 });
}
