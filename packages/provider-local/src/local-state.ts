import { randomBytes } from "node:crypto";
import { lstatSync, readFileSync } from "node:fs";
import { chmod, chown, mkdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxState } from "@sbox/core/spec";
import { attachDisk, type DiskSupport, unmountBelow } from "./local-disk.js";
import { localError } from "./local-errors.js";
import { assertLocalId } from "./local-ids.js";
import { DEFAULT_DISK_MB, type LocalResources } from "./local-limits.js";
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
  /** Whether the sandbox may reach the host's loopback (`local({ network: { hostLoopback: true } })`). */
  readonly hostLoopback?: boolean | undefined;
  /**
   * Whether `allow-all` may share the host's network where no user-mode stack is usable
   * (`local({ network: { hostNetwork: true } })`); without it such a sandbox's commands are refused.
   */
  readonly hostNetwork?: boolean | undefined;
  /**
   * `"image"`: the sandbox's directories are on a disk image of its own, `resources.diskMB` large (the total
   * size limit; see local-disk.ts), loop-mounted by root with its directories bound over the sandbox's.
   * `"fuse"`: the same image mounted unprivileged with fuse2fs, its directories used where they are.
   * Absent: plain directories on the host's disk (each file limited only).
   */
  readonly disk?: "image" | "fuse" | undefined;
  /** Limits (absent in records written before limits existed: the defaults apply). */
  readonly resources?: LocalResources | undefined;
}

/** Where the parts of one sandbox live on the host. */
export interface LocalSandboxPaths {
  /** `<root>/<id>` */
  readonly dir: string;
  /** Mounted at `/workspace`: the default cwd. */
  readonly workspace: string;
  /** Mounted at `/tmp`, kept for the sandbox's lifetime. */
  readonly tmp: string;
  /** Mounted at `/home/user`, the sandbox user's home. */
  readonly home: string;
  /** The sandbox's own `/etc/passwd`, `group`, `hosts`, `hostname`, `resolv.conf` (written by the provider). */
  readonly etc: string;
  /** The network helper's control socket and log. */
  readonly net: string;
  /** Launch files of starting commands (their bubblewrap arguments), removed once they run. */
  readonly launch: string;
  /** One directory per background process: output files, pid and exit records. */
  readonly procs: string;
  /** One directory per snapshot. */
  readonly snapshots: string;
  /** The metadata file. */
  readonly record: string;
}

/** The paths of sandbox `id` under `root`; the id is validated first, so the result is always inside `root`. */
export function sandboxPaths(root: string, id: string): LocalSandboxPaths {
  return pathsIn(join(root, assertLocalId(id)));
}

/** The paths of a sandbox whose directory is `dir` (also one moved aside while it is destroyed). */
export function pathsIn(dir: string): LocalSandboxPaths {
  return {
    dir,
    workspace: join(dir, "workspace"),
    tmp: join(dir, "tmp"),
    home: join(dir, "home"),
    etc: join(dir, "etc"),
    net: join(dir, "net"),
    launch: join(dir, "launch"),
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

/**
 * Creates the directories a sandbox needs that are missing (all of them for a new sandbox; a sandbox made by
 * an earlier version has no home directory yet). The sandbox's own directories are handed to `owner`, the
 * host id of the sandbox user, so that it can write them.
 */
export async function ensureSandboxDirectories(
  paths: LocalSandboxPaths,
  owner: { readonly uid: number; readonly gid: number } | undefined,
): Promise<void> {
  const make = async (path: string, mode: number, sandboxOwned: boolean) => {
    try {
      await mkdir(path, { mode });
    } catch (error) {
      if ((error as { code?: string }).code === "EEXIST") return;
      throw error;
    }
    // The umask applied at creation; /tmp must be world-writable and sticky like a real one.
    await chmod(path, mode);
    if (sandboxOwned && owner) await chown(path, owner.uid, owner.gid);
  };
  await Promise.all([
    make(paths.workspace, 0o755, true),
    make(paths.tmp, 0o1777, true),
    make(paths.home, 0o755, true),
    make(paths.procs, 0o700, false),
    make(paths.snapshots, 0o700, false),
    make(paths.etc, 0o755, false),
    make(paths.net, 0o700, false),
    make(paths.launch, 0o700, false),
  ]);
}

/**
 * Creates the directories of a new sandbox and its first record; with `disk` (and `record.disk`), its own disk
 * image of `record.resources.diskMB` under them.
 */
export async function createSandboxDirectories(
  paths: LocalSandboxPaths,
  record: LocalSandboxRecord,
  owner: { readonly uid: number; readonly gid: number } | undefined,
  disk?: DiskSupport | undefined,
): Promise<void> {
  await mkdir(paths.dir, { recursive: false, mode: 0o700 });
  await ensureSandboxDirectories(paths, owner);
  if (record.disk !== undefined) {
    if (disk?.kind !== record.disk)
      throw localError("Provider", "a disk image was asked for where none can be made");
    await attachDisk(disk, paths, record.resources?.diskMB ?? DEFAULT_DISK_MB, owner);
  }
  try {
    await writeRecord(paths, record);
  } catch (error) {
    // No mount (nor, unprivileged, its daemon) outlives a create that failed.
    if (record.disk !== undefined) await unmountBelow(paths.dir).catch(() => {});
    throw error;
  }
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
    Array.isArray(r.ports) &&
    (r.resources === undefined || (typeof r.resources === "object" && r.resources !== null))
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
