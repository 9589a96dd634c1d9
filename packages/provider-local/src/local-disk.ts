import { execFile, spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  ftruncateSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
} from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { localError } from "./local-errors.js";
import { startBoundMs } from "./local-start-wait.js";
import type { LocalSandboxPaths } from "./local-state.js";

/**
 * The total size limit of a sandbox's writable directories (`/workspace`, `/tmp`, `/home/user`): an ext4
 * image of its own, `diskMB` large and sparse (it takes on the host's disk only what is written), loop-mounted
 * at `<sandbox>/disk` with its three directories bind-mounted where the sandbox's directories are, so every
 * path stays what it was. Only root can mount one; elsewhere each file is limited (RLIMIT_FSIZE), not the total.
 */
export type DiskSupport =
  | { readonly kind: "image"; readonly mkfs: string }
  | { readonly kind: "none"; readonly reason: string };

const SYSTEM_SBIN = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"];
const TOOL_ENV = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" };
/** ext4 needs a few MiB for its own structures: a smaller `diskMB` still gets an image of this size. */
export const MIN_IMAGE_MB = 8;
/** The directories of the image, each bind-mounted over the sandbox's directory of the same name. */
const AREAS = ["workspace", "tmp", "home"] as const;
const MKFS_OPTIONS = ["-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard"];
const MOUNT_OPTIONS = ["-t", "ext4", "-o", "loop,nosuid,nodev,noatime"];

interface Outcome {
  readonly ok: boolean;
  readonly why: string;
}

let support: DiskSupport | undefined;

function findTool(name: string): string | undefined {
  return SYSTEM_SBIN.map((dir) => join(dir, name)).find((path) => existsSync(path));
}

/** Runs a tool synchronously: only for the one-time probe. */
function runSync(file: string, args: readonly string[]): Outcome {
  const result = spawnSync(file, args, {
    env: TOOL_ENV,
    encoding: "utf8",
    timeout: startBoundMs(),
    stdio: "pipe",
  });
  const why = `${result.stderr ?? ""}`.trim() || result.error?.message || `exit ${String(result.status)}`;
  return { ok: result.status === 0, why };
}

/** Runs a tool without blocking the event loop (many sandboxes may be created or destroyed at once). */
function run(file: string, args: readonly string[]): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { env: TOOL_ENV, encoding: "utf8", timeout: startBoundMs() },
      (error, _stdout, stderr) => {
        resolve({ ok: !error, why: `${stderr ?? ""}`.trim() || error?.message || "" });
      },
    );
  });
}

/** A sparse file of `mb` MiB (the host's disk holds only what is written into it); `undefined` or the error. */
function sparseFile(image: string, mb: number): Outcome | undefined {
  try {
    const fd = openSync(image, "wx", 0o600);
    try {
      ftruncateSync(fd, mb * 1024 * 1024);
    } finally {
      closeSync(fd);
    }
    return undefined;
  } catch (error) {
    return { ok: false, why: (error as Error).message };
  }
}

/** The mount point of the image, made when missing (root only, mode 0700); `undefined` or the error. */
function mountPointAt(at: string): Outcome | undefined {
  try {
    mkdirSync(at, { mode: 0o700 });
  } catch (error) {
    if ((error as { code?: string }).code !== "EEXIST") return { ok: false, why: (error as Error).message };
  }
  return undefined;
}

/**
 * Whether sandboxes under `stateRoot` get a disk image: as root, with mkfs.ext4 and loop devices, by really
 * making and mounting a small image once per process (a container may have the tools but not the right to
 * mount); each state root is first made a private mount of itself, once (see `makeRootPrivate`).
 */
export function diskSupport(stateRoot: string, root: boolean): DiskSupport {
  if (support?.kind === "none") return support;
  let made = privateRoots.get(stateRoot);
  if (made) return made;
  const tools = support ?? toolSupport(root);
  if (tools.kind === "none") {
    support = tools;
    return tools;
  }
  mkdirSync(stateRoot, { recursive: true, mode: 0o700 });
  const failed = makeRootPrivate(stateRoot);
  if (failed) made = { kind: "none", reason: `cannot make the state root a private mount: ${failed.why}` };
  else {
    // The probe's mount is below the (now private) state root: it reaches no other mount namespace.
    support ??= probeDiskImage(stateRoot, tools.mkfs);
    made = support;
  }
  privateRoots.set(stateRoot, made);
  return made;
}

/** State roots made private mounts by this process, and what that gave. */
const privateRoots = new Map<string, DiskSupport>();

/** Whether this host has what a disk image needs, before trying one. */
function toolSupport(root: boolean): DiskSupport {
  const mkfs = findTool("mkfs.ext4");
  if (!root) return { kind: "none", reason: "mounting a disk image needs root" };
  if (!mkfs) return { kind: "none", reason: "mkfs.ext4 is not installed (apt-get install e2fsprogs)" };
  if (!existsSync("/dev/loop-control"))
    return { kind: "none", reason: "no loop devices (/dev/loop-control)" };
  return { kind: "image", mkfs };
}

/** Makes and mounts a small image below `stateRoot`, once per process: what is possible, not what is installed. */
function probeDiskImage(stateRoot: string, mkfs: string): DiskSupport {
  const probe = mkdtempSync(join(stateRoot, ".disk-probe-"));
  const image = join(probe, "disk.img");
  const at = join(probe, "disk");
  let mounted: Outcome = { ok: false, why: "" };
  try {
    mounted = sparseFile(image, MIN_IMAGE_MB) ?? mountPointAt(at) ?? runSync(mkfs, [...MKFS_OPTIONS, image]);
    if (mounted.ok) mounted = runSync("mount", [...MOUNT_OPTIONS, image, at]);
    return mounted.ok
      ? { kind: "image", mkfs }
      : { kind: "none", reason: `cannot mount a disk image: ${mounted.why}` };
  } finally {
    if (mounted.ok) runSync("umount", [at]);
    rmSync(probe, { recursive: true, force: true });
  }
}

/** The mount points of this program's mount namespace, decoded, in the order of `/proc/self/mountinfo`. */
function mountPointsSync(): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => unescapeMountPath(line.split(" ")[4] ?? ""));
}

/**
 * Makes the state root a private mount (bound onto itself once, then marked private; it stays until a
 * reboot): the sandboxes' mounts below it are then made and removed without propagating into any other mount
 * namespace. Without that, every sandbox's mounts would be copied into every running sandbox's namespaces
 * (they are slaves of the host's root mount), which slows every mount on the host down as sandboxes add up.
 * `undefined` when done, else why not.
 */
function makeRootPrivate(stateRoot: string): Outcome | undefined {
  if (!mountPointsSync().includes(stateRoot)) {
    const bound = runSync("mount", ["--bind", stateRoot, stateRoot]);
    if (!bound.ok) return bound;
  }
  const made = runSync("mount", ["--make-private", stateRoot]);
  return made.ok ? undefined : made;
}

/**
 * Takes back the state root's bind onto itself once nothing is mounted below it (its last sandbox with a
 * disk was destroyed), so that a state root the user removes is an ordinary directory again (a mount point
 * cannot be removed: EBUSY) and no mount of sbox outlives its sandboxes. Best effort and safe to race: the
 * umount fails while another program's sandbox mounts something below, and the next sandbox with a disk binds
 * the root again (a sandbox whose disk lands in the gap merely mounts below a shared parent).
 */
export async function releaseStateRootIfIdle(stateRoot: string): Promise<void> {
  const mounts = await mountTable();
  if (mounts.some((mount) => mount.point.startsWith(`${stateRoot}/`))) return;
  const own = mounts.filter((mount) => mount.point === stateRoot);
  // Only the bind makeRootPrivate made: a directory of the filesystem below it, bound onto itself (a
  // filesystem the user mounts there shows its own root, "/", and is never taken down).
  const below = mounts.filter((mount) => mount.point !== stateRoot && isUnder(stateRoot, mount.point));
  const parent = below.sort((a, b) => b.point.length - a.point.length)[0];
  if (own.length !== 1 || !parent || own[0]!.root === "/" || own[0]!.device !== parent.device) return;
  privateRoots.delete(stateRoot);
  await run("umount", [stateRoot]);
}

/** Whether `path` is `dir` or inside it. */
function isUnder(path: string, dir: string): boolean {
  return dir === "/" || path === dir || path.startsWith(`${dir}/`);
}

/** The mounts of this program's mount namespace: mount point, root within its filesystem, device. */
async function mountTable(): Promise<{ point: string; root: string; device: string }[]> {
  return (await readFile("/proc/self/mountinfo", "utf8"))
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => {
      const fields = line.split(" ");
      return {
        point: unescapeMountPath(fields[4] ?? ""),
        root: unescapeMountPath(fields[3] ?? ""),
        device: fields[2] ?? "",
      };
    });
}

function imageOf(paths: LocalSandboxPaths): { image: string; mountPoint: string } {
  return { image: join(paths.dir, "disk.img"), mountPoint: join(paths.dir, "disk") };
}

/** The image's own directories of a sandbox with a disk image (bound over its `workspace`, `tmp` and `home`). */
export function diskAreas(paths: LocalSandboxPaths): { workspace: string; tmp: string; home: string } {
  const { mountPoint } = imageOf(paths);
  return {
    workspace: join(mountPoint, "workspace"),
    tmp: join(mountPoint, "tmp"),
    home: join(mountPoint, "home"),
  };
}

/** Whether `path` is a mount point: another device than its parent's (every mount here is of another fs). */
function isMountPoint(path: string, parent: string): boolean {
  try {
    return statSync(path).dev !== statSync(parent).dev;
  } catch {
    return false;
  }
}

/**
 * Gives a new sandbox its disk: makes the image, mounts it, makes the three directories in it (owned by the
 * sandbox user) and binds them over the sandbox's (empty) directories. Undone when a step fails.
 */
export async function attachDisk(
  disk: Extract<DiskSupport, { kind: "image" }>,
  paths: LocalSandboxPaths,
  diskMB: number,
  owner: { readonly uid: number; readonly gid: number } | undefined,
): Promise<void> {
  const { image, mountPoint } = imageOf(paths);
  const sparse = sparseFile(image, Math.max(diskMB, MIN_IMAGE_MB)) ?? mountPointAt(mountPoint);
  if (sparse) throw localError("Provider", `cannot make the sandbox's disk image ${image}: ${sparse.why}`);
  // One shell for every step (instead of a process per step from here): a hundred sandboxes created at once
  // on a loaded host pay for a node spawn each, not for six.
  const made = await run("/bin/sh", [
    "-c",
    ATTACH_SCRIPT,
    "sbox-disk",
    disk.mkfs,
    image,
    mountPoint,
    owner ? `${owner.uid}:${owner.gid}` : "",
    paths.workspace,
    paths.tmp,
    paths.home,
  ]);
  if (!made.ok) {
    await unmountBelow(paths.dir).catch(() => {});
    throw localError("Provider", `cannot make or mount the sandbox's disk image ${image}: ${made.why}`);
  }
}

/**
 * The steps of `attachDisk` after the sparse file: make the file system, mount it, make its three directories
 * (owned by the sandbox user, `/tmp` sticky and world-writable like a real one) and bind each over the
 * sandbox's directory of the same name. Arguments: mkfs, image, mount point, owner (`uid:gid` or empty), then
 * the sandbox's workspace, tmp and home.
 */
const ATTACH_SCRIPT = [
  "set -e",
  `"$1" ${MKFS_OPTIONS.join(" ")} "$2"`,
  `mount ${MOUNT_OPTIONS.join(" ")} "$2" "$3"`,
  'rm -rf "$3/lost+found"',
  'mkdir -m 755 "$3/workspace" "$3/home"',
  'mkdir -m 1777 "$3/tmp"',
  'if [ -n "$4" ]; then chown "$4" "$3/workspace" "$3/tmp" "$3/home"; fi',
  'mount --bind "$3/workspace" "$5"',
  'mount --bind "$3/tmp" "$6"',
  'mount --bind "$3/home" "$7"',
].join("\n");

async function mountImage(image: string, mountPoint: string): Promise<void> {
  const mounted = mountPointAt(mountPoint) ?? (await run("mount", [...MOUNT_OPTIONS, image, mountPoint]));
  if (!mounted.ok) throw localError("Provider", `cannot mount the sandbox's disk image: ${mounted.why}`);
}

async function bindAreas(paths: LocalSandboxPaths): Promise<void> {
  const { mountPoint } = imageOf(paths);
  for (const area of AREAS) {
    const target = paths[area];
    if (isMountPoint(target, paths.dir)) continue;
    const bound = await run("mount", ["--bind", join(mountPoint, area), target]);
    if (!bound.ok) {
      throw localError("Provider", `cannot bind the sandbox's ${area} from its disk: ${bound.why}`);
    }
  }
}

/**
 * Mounts the disk of a sandbox that has one again when it is not mounted (after a reboot, or an unmount by
 * hand), before anything reads or writes its directories: they would otherwise be the empty directories
 * below, and what was written there hidden once the disk is back. Cheap when mounted (a few `stat`s).
 */
export async function ensureDiskMounted(paths: LocalSandboxPaths): Promise<void> {
  if (AREAS.every((area) => isMountPoint(paths[area], paths.dir))) return;
  const { image, mountPoint } = imageOf(paths);
  if (!existsSync(image)) throw localError("Provider", `the disk image of the sandbox is missing (${image})`);
  if (!isMountPoint(mountPoint, paths.dir)) await mountImage(image, mountPoint);
  await bindAreas(paths);
}

/** `\040`-style escapes of `/proc/self/mountinfo` decoded. */
function unescapeMountPath(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/**
 * Unmounts everything mounted at or below `dir` (a sandbox's directory, also one moved aside while it is
 * destroyed), deepest first: the binds, then the disk (its loop device goes with it). Rejects when one stays.
 */
export async function unmountBelow(dir: string): Promise<void> {
  const mounted = async () =>
    (await mountTable())
      .map((mount) => mount.point)
      .filter((point) => isUnder(point, dir))
      .sort((a, b) => b.length - a.length);
  // One umount for all of them (deepest first, the order umount takes them in); one by one, lazily, only
  // for what that left.
  const points = await mounted();
  if (points.length > 0 && !(await run("umount", points)).ok) {
    for (const point of await mounted()) {
      if (!(await run("umount", [point])).ok) await run("umount", ["-l", point]);
    }
  }
  const left = await mounted();
  if (left.length > 0) throw localError("Provider", `cannot unmount ${left.join(", ")}`);
}
