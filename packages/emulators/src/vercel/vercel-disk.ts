/**
 * What a Vercel snapshot holds, and how a new session gets it back. On the service a snapshot is the whole
 * disk. Where the backend's snapshots seed new machines (it honours `template`: the docker backend commits
 * the container), a snapshot is the backend's own — the whole filesystem, accounts and packages included —
 * and a session from it is a machine created from it. Elsewhere (provider-local) it is a tarball of the
 * working directory, unpacked into a fresh machine: the workdir's files survive, nothing outside it.
 * Processes survive neither, as on the service.
 */
import type { AnyCapabilities, Sandbox, SandboxSpec, SnapshotRef } from "@sbox/core";
import type { EmulatorBackend } from "../backend.js";

/** A captured disk. */
export type VercelDisk =
  | { readonly kind: "tarball"; readonly bytes: Uint8Array }
  | {
      readonly kind: "backend";
      readonly ref: SnapshotRef;
      /** The machine it was taken of: the backend's snapshots are deleted through it, even once destroyed. */
      readonly owner: Sandbox<AnyCapabilities>;
      readonly sizeBytes: number;
    };

const TARBALL_PATH = "/tmp/.sbox-vercel-image.tgz";

/** A disk capture that failed, with the backend's words. */
export class DiskError extends Error {}

/** Whether `backend` takes whole-disk snapshots that new machines start from. */
export function wholeDiskSnapshots(backend: EmulatorBackend, machine: Sandbox<AnyCapabilities>): boolean {
  return backend.honours.includes("template") && machine.snapshots !== undefined;
}

/** Captures `machine`'s disk (the whole of it where the backend can, else the tarball of `cwd`). */
export async function captureDisk(
  backend: EmulatorBackend,
  machine: Sandbox<AnyCapabilities>,
  cwd: string,
): Promise<VercelDisk> {
  if (wholeDiskSnapshots(backend, machine)) {
    // The size the service reports is the disk's; the backend's snapshot does not say, so it is measured.
    const used = await machine.commands.run(["sh", "-c", "du -skx / 2>/dev/null | cut -f1"]);
    const ref = await machine.snapshots!.create();
    return { kind: "backend", ref, owner: machine, sizeBytes: (Number(used.stdout.trim()) || 0) * 1024 };
  }
  const packed = await machine.commands.run(["tar", "-czf", TARBALL_PATH, "-C", cwd, "."], {
    timeoutMs: 120_000,
  });
  if (packed.exitCode !== 0) throw new DiskError(packed.stderr.trim());
  const bytes = await machine.files.read(TARBALL_PATH);
  await Promise.resolve(machine.commands.run(["rm", "-f", TARBALL_PATH])).catch(() => undefined);
  return { kind: "tarball", bytes };
}

/** The size a snapshot of `disk` reports. */
export function diskSize(disk: VercelDisk): number {
  return disk.kind === "tarball" ? disk.bytes.byteLength : disk.sizeBytes;
}

/** The spec of a machine that starts from `disk` (the backend's snapshot as its template). */
export function specFrom(disk: VercelDisk | undefined, spec: SandboxSpec): SandboxSpec {
  return disk?.kind === "backend" ? { ...spec, template: disk.ref.id } : spec;
}

/** Puts a tarball disk into a machine started from {@link specFrom} (a backend disk is already there). */
export async function unpackDisk(
  machine: Sandbox<AnyCapabilities>,
  cwd: string,
  disk: VercelDisk | undefined,
): Promise<void> {
  if (disk?.kind !== "tarball") return;
  await machine.files.write(TARBALL_PATH, disk.bytes);
  const unpacked = await machine.commands.run(["tar", "-xzf", TARBALL_PATH, "-C", cwd], {
    timeoutMs: 120_000,
  });
  await Promise.resolve(machine.commands.run(["rm", "-f", TARBALL_PATH])).catch(() => undefined);
  if (unpacked.exitCode !== 0) throw new DiskError(unpacked.stderr.trim());
}

/** Frees what a disk holds on the backend (a tarball holds nothing there). */
export async function dropDisk(disk: VercelDisk): Promise<void> {
  if (disk.kind === "backend") await disk.owner.snapshots?.delete(disk.ref);
}
