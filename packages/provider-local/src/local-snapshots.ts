import { cp, lstat, mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { SnapshotRef } from "@sbox/core/spec";
import { localError } from "./local-errors.js";
import { assertLocalId, newLocalId } from "./local-ids.js";
import { type LocalSandboxPaths, writeFileAtomic } from "./local-state.js";

interface SnapshotMeta {
  readonly version: 1;
  readonly id: string;
  readonly name?: string | undefined;
  readonly createdAt: string;
}

/**
 * Copies a workspace tree: symlinks are copied as links (never followed), sockets, FIFOs and devices are
 * skipped (they cannot be copied meaningfully), timestamps and modes are kept.
 */
export async function copyTree(from: string, to: string): Promise<void> {
  await cp(from, to, {
    recursive: true,
    verbatimSymlinks: true,
    preserveTimestamps: true,
    force: true,
    errorOnExist: false,
    filter: async (source) => {
      const stats = await lstat(source);
      return stats.isFile() || stats.isDirectory() || stats.isSymbolicLink();
    },
  });
}

/** Deletes everything inside `dir`, keeping `dir` itself (and so every bind mount of it). */
export async function emptyDirectory(dir: string): Promise<void> {
  const names = await readdir(dir);
  await Promise.all(
    names.map((name) => rm(join(dir, name), { recursive: true, force: true, maxRetries: 2 })),
  );
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
  await mkdir(dir, { recursive: true, mode: 0o700 });
  try {
    await copyTree(paths.workspace, join(dir, "workspace"));
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

/** Replaces the workspace's content with the snapshot's, in place. */
export async function restoreSnapshot(paths: LocalSandboxPaths, ref: SnapshotRef): Promise<void> {
  const dir = snapshotDir(paths, ref?.id);
  if (!(await readMeta(dir))) throw localError("NotFound", `no snapshot ${ref.id}`);
  await emptyDirectory(paths.workspace);
  await copyTree(join(dir, "workspace"), paths.workspace);
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
