import { randomBytes } from "node:crypto";
import { lstatSync, readFileSync } from "node:fs";
import { chmod, mkdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxState } from "@sbox/core/spec";
import { localError } from "./local-errors.js";
import { assertLocalId } from "./local-ids.js";
import type { LocalEgress } from "./local-options.js";

/** The lifecycle states the local provider keeps on disk (`destroyed` is the absence of the directory). */
export type LocalStoredState = Extract<SandboxState, "running" | "stopped" | "paused">;

/** The metadata file of one sandbox (`sandbox.json`). */
export interface LocalSandboxRecord {
  readonly version: 1;
  readonly id: string;
  readonly name?: string | undefined;
  readonly createdAt: string;
  readonly metadata: Readonly<Record<string, string>>;
  /** Environment of every command (the spec's `env`). */
  readonly env: Readonly<Record<string, string>>;
  readonly state: LocalStoredState;
  readonly expiresAt?: string | undefined;
  readonly egress: LocalEgress;
  readonly ports: readonly number[];
}

/** Where the parts of one sandbox live on the host. */
export interface LocalSandboxPaths {
  /** `<root>/<id>` */
  readonly dir: string;
  /** Mounted at `/workspace`: the default cwd. */
  readonly workspace: string;
  /** Mounted at `/tmp`, kept for the sandbox's lifetime. */
  readonly tmp: string;
  /** One directory per background process: output files, pid and exit records. */
  readonly procs: string;
  /** One directory per snapshot. */
  readonly snapshots: string;
  /** The metadata file. */
  readonly record: string;
}

/** The paths of sandbox `id` under `root`; the id is validated first, so the result is always inside `root`. */
export function sandboxPaths(root: string, id: string): LocalSandboxPaths {
  const dir = join(root, assertLocalId(id));
  return {
    dir,
    workspace: join(dir, "workspace"),
    tmp: join(dir, "tmp"),
    procs: join(dir, "procs"),
    snapshots: join(dir, "snapshots"),
    record: join(dir, "sandbox.json"),
  };
}

/** Writes a file by renaming a complete temporary copy over it, so readers never see half a file. */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  const temporary = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await writeFile(temporary, data, { mode: 0o600 });
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true }).catch(() => {});
    throw error;
  }
}

/** Creates the directories of a new sandbox and its first record. */
export async function createSandboxDirectories(
  paths: LocalSandboxPaths,
  record: LocalSandboxRecord,
): Promise<void> {
  await mkdir(paths.dir, { recursive: false, mode: 0o700 });
  await Promise.all([
    mkdir(paths.workspace, { mode: 0o755 }),
    // Like a real /tmp: world-writable and sticky.
    mkdir(paths.tmp).then(() => chmod(paths.tmp, 0o1777)),
    mkdir(paths.procs, { mode: 0o700 }),
    mkdir(paths.snapshots, { mode: 0o700 }),
  ]);
  await writeRecord(paths, record);
}

/** Writes the record atomically. */
export async function writeRecord(paths: LocalSandboxPaths, record: LocalSandboxRecord): Promise<void> {
  await writeFileAtomic(paths.record, `${JSON.stringify(record, null, 2)}\n`);
}

function isRecord(value: unknown, id: string): value is LocalSandboxRecord {
  if (typeof value !== "object" || value === null) return false;
  const r = value as Record<string, unknown>;
  return (
    r.version === 1 &&
    r.id === id &&
    typeof r.createdAt === "string" &&
    (r.state === "running" || r.state === "stopped" || r.state === "paused") &&
    typeof r.metadata === "object" &&
    r.metadata !== null &&
    typeof r.env === "object" &&
    r.env !== null &&
    (r.egress === "allow-all" || r.egress === "block-all") &&
    Array.isArray(r.ports)
  );
}

/**
 * Reads the record of a sandbox: `NotFound` when the directory or its record is missing (or the directory is
 * a symlink, which this provider never creates), `Provider` when the record is unreadable.
 */
export async function readRecord(paths: LocalSandboxPaths, id: string): Promise<LocalSandboxRecord> {
  const notFound = () => localError("NotFound", `no local sandbox ${id}`);
  // Synchronous: a few hundred bytes read on every call; a thread-pool round trip would cost more than the read.
  try {
    const info = lstatSync(paths.dir);
    if (!info.isDirectory()) throw notFound();
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT" || (error as { code?: string }).code === "ENOTDIR")
      throw notFound();
    throw error;
  }
  let text: string;
  try {
    text = readFileSync(paths.record, "utf8");
  } catch (error) {
    // A directory without a record is a sandbox being created or destroyed right now.
    if ((error as { code?: string }).code === "ENOENT") throw notFound();
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw localError("Provider", `the record of local sandbox ${id} is corrupt (${paths.record})`, error);
  }
  if (!isRecord(parsed, id))
    throw localError("Provider", `the record of local sandbox ${id} is malformed (${paths.record})`);
  return parsed;
}

/** Reads, changes and writes back the record. Last writer wins; every write is atomic. */
export async function updateRecord(
  paths: LocalSandboxPaths,
  id: string,
  change: (record: LocalSandboxRecord) => LocalSandboxRecord,
): Promise<LocalSandboxRecord> {
  const next = change(await readRecord(paths, id));
  await writeRecord(paths, next);
  return next;
}
