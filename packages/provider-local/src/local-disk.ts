import { execFile, spawn, spawnSync } from "node:child_process";
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  ftruncateSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
} from "node:fs";
import { chmod, mkdir, readFile, rm, rmdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { localError } from "./local-errors.js";
import { withLock } from "./local-lock.js";
import { isProcessAlive, readProcStat, sendSignal } from "./local-procfs.js";
import { startBoundMs } from "./local-start-wait.js";
import type { LocalSandboxPaths } from "./local-state.js";

/**
 * The total size limit of a sandbox's writable directories (`/workspace`, `/tmp`, `/home/user`): an ext4
 * image of its own, `diskMB` large and sparse (it takes on the host's disk only what is written), mounted at
 * `<sandbox>/disk`. As root (`image`) it is loop-mounted, with its three directories bind-mounted where the
 * sandbox's directories are, so every path stays what it was. Unprivileged (`fuse`) it is mounted through FUSE
 * by `fuse2fs` (a daemon of the host user, outside the sandbox) with the setuid `fusermount3`; no bind can be
 * made there, so the sandbox's view and the host's file operations use the image's directories themselves
 * (see `pathsWithDisk`). Without either, each file is limited (RLIMIT_FSIZE), not the total.
 */
export type DiskSupport =
  | { readonly kind: "image"; readonly mkfs: string }
  | FuseTools
  | { readonly kind: "none"; readonly reason: string };

/** What an unprivileged host mounts a disk image with. */
export interface FuseTools {
  readonly kind: "fuse";
  readonly mkfs: string;
  readonly fuse2fs: string;
  readonly fusermount: string;
}

const SYSTEM_SBIN = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"];
const TOOL_ENV = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" };
/** ext4 needs a few MiB for its own structures: a smaller `diskMB` still gets an image of this size. */
export const MIN_IMAGE_MB = 8;
/** The directories of the image, each bind-mounted over the sandbox's directory of the same name. */
const AREAS = ["workspace", "tmp", "home"] as const;
const MKFS_OPTIONS = ["-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard"];
const MOUNT_OPTIONS = ["-t", "ext4", "-o", "loop,nosuid,nodev,noatime"];
/**
 * fuse2fs's mount options. No `allow_other`: only processes of the host user (the sandbox's, whose every id
 * maps to it) reach the file system; fusermount3 adds nosuid and nodev for a user's mount anyway. No
 * `fakeroot`: fuse2fs checks access itself against the ids the kernel gives it (the host user's).
 */
const FUSE_OPTIONS = "nosuid,nodev,noatime";
/** What the installer needs to get a FUSE disk image, said wherever one is missing. */
const FUSE_INSTALL = "apt-get install fuse2fs fuse3";

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
  if (!root) return fuseSupport(stateRoot);
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
  if (!root) return { kind: "none", reason: "mounting a loop device needs root" };
  if (!mkfs) return { kind: "none", reason: "mkfs.ext4 is not installed (apt-get install e2fsprogs)" };
  if (!existsSync("/dev/loop-control"))
    return { kind: "none", reason: "no loop devices (/dev/loop-control)" };
  return { kind: "image", mkfs };
}

let fuseProbed: DiskSupport | undefined;

/**
 * Whether an unprivileged host can give sandboxes a disk image: mkfs.ext4, fuse2fs and fusermount3 installed
 * and /dev/fuse open to this user, then a small image really made and mounted once per process below
 * `stateRoot` (a container may have the tools but no FUSE).
 */
function fuseSupport(stateRoot: string): DiskSupport {
  if (fuseProbed) return fuseProbed;
  const tools = fuseTools();
  if (tools.kind === "none") {
    fuseProbed = tools;
    return tools;
  }
  mkdirSync(stateRoot, { recursive: true, mode: 0o700 });
  fuseProbed = probeFuseImage(stateRoot, tools);
  return fuseProbed;
}

/** The programs a FUSE disk image needs, found (not tried). */
function fuseTools(): FuseTools | { readonly kind: "none"; readonly reason: string } {
  const mkfs = findTool("mkfs.ext4");
  const fuse2fs = findTool("fuse2fs");
  const fusermount = findTool("fusermount3") ?? findTool("fusermount");
  const missing = [!fuse2fs && "fuse2fs", !fusermount && "fusermount3 (fuse3)", !mkfs && "mkfs.ext4"].filter(
    Boolean,
  );
  if (missing.length > 0) {
    return {
      kind: "none",
      reason: `without root a disk image is mounted with fuse2fs, and ${missing.join(", ")} ${missing.length > 1 ? "are" : "is"} not installed (${FUSE_INSTALL})`,
    };
  }
  try {
    accessSync("/dev/fuse", constants.R_OK | constants.W_OK);
  } catch (error) {
    return {
      kind: "none",
      reason: `without root a disk image is mounted with fuse2fs, and /dev/fuse cannot be opened (${(error as { code?: string }).code ?? "missing"}; the fuse3 package's udev rule makes it mode 0666)`,
    };
  }
  return { kind: "fuse", mkfs: mkfs!, fuse2fs: fuse2fs!, fusermount: fusermount! };
}

let fuseToolsFound: FuseTools | undefined;

/** The FUSE tools, for a sandbox that already has a FUSE disk (its disk is mounted again, or taken down). */
function requireFuseTools(): FuseTools {
  if (fuseToolsFound) return fuseToolsFound;
  const tools = fuseTools();
  if (tools.kind === "none")
    throw localError("Provider", `cannot mount the sandbox's disk image: ${tools.reason}`);
  fuseToolsFound = tools;
  return tools;
}

/** mkfs.ext4's options for an image the host user owns (its root directory too: no root needed to use it). */
function fuseMkfsOptions(): string[] {
  const owner = `root_owner=${process.getuid?.() ?? 0}:${process.getgid?.() ?? 0}`;
  return [...MKFS_OPTIONS.slice(0, -1), `${MKFS_OPTIONS.at(-1)},${owner}`];
}

/**
 * The probe's mount: fuse2fs in the foreground of a shell that waits for the mount (its own device at the
 * mount point), unmounts it and reaps the daemon, so that nothing of the probe outlives it. Arguments:
 * fuse2fs, image, mount point, its parent, fusermount3, the options.
 */
const FUSE_PROBE_SCRIPT = [
  '"$1" "$2" "$3" -f -o "$6" & pid=$!',
  "i=0",
  'while [ "$(stat -c %d "$3")" = "$(stat -c %d "$4")" ]; do',
  '  if ! kill -0 $pid 2>/dev/null; then wait $pid; echo "fuse2fs exited without a mount" >&2; exit 1; fi',
  '  i=$((i+1)); if [ $i -gt 1000 ]; then kill -9 $pid; echo "no mount after 10 s" >&2; exit 1; fi',
  "  sleep 0.01",
  "done",
  '"$5" -u "$3" || "$5" -uz "$3"',
  "wait $pid || true",
].join("\n");

/** Makes and mounts a small image below `stateRoot` with fuse2fs once, then takes it down again. */
function probeFuseImage(stateRoot: string, tools: FuseTools): DiskSupport {
  const probe = mkdtempSync(join(stateRoot, ".disk-probe-"));
  const image = join(probe, "disk.img");
  const at = join(probe, "disk");
  try {
    let mounted =
      sparseFile(image, MIN_IMAGE_MB) ??
      mountPointAt(at) ??
      runSync(tools.mkfs, [...fuseMkfsOptions(), image]);
    if (mounted.ok) {
      mounted = runSync("/bin/sh", [
        "-c",
        FUSE_PROBE_SCRIPT,
        "sbox-disk-probe",
        tools.fuse2fs,
        image,
        at,
        probe,
        tools.fusermount,
        FUSE_OPTIONS,
      ]);
    }
    return mounted.ok
      ? tools
      : { kind: "none", reason: `cannot mount a disk image with fuse2fs: ${mounted.why}` };
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
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

/** The mount points at or below `dir`, deepest first (the order they can be unmounted in). */
async function mountsBelow(dir: string): Promise<string[]> {
  return (await mountTable())
    .map((mount) => mount.point)
    .filter((point) => isUnder(point, dir))
    .sort((a, b) => b.length - a.length);
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
  disk: Exclude<DiskSupport, { kind: "none" }>,
  paths: LocalSandboxPaths,
  diskMB: number,
  owner: { readonly uid: number; readonly gid: number } | undefined,
): Promise<void> {
  if (disk.kind === "fuse") return attachFuseDisk(disk, paths, diskMB);
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
export async function ensureDiskMounted(
  paths: LocalSandboxPaths,
  kind: "image" | "fuse" = "image",
): Promise<void> {
  if (kind === "fuse") return ensureFuseMounted(paths.dir);
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
  if (process.getuid?.() !== 0) return unmountFuseBelow(dir);
  const mounted = () => mountsBelow(dir);
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

/**
 * The paths of a sandbox as the host and its view use them: with a FUSE disk, its `workspace`, `tmp` and
 * `home` are the image's own directories (nothing can be bound over the sandbox's unprivileged); else as they
 * are (as root the image's directories are bound over them).
 */
export function pathsWithDisk(
  paths: LocalSandboxPaths,
  record: { readonly disk?: "image" | "fuse" | undefined },
): LocalSandboxPaths {
  return record.disk === "fuse" ? { ...paths, ...diskAreas(paths) } : paths;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Where the pid and start time of a sandbox's fuse2fs are kept (in its directory, outside its view). */
const daemonFile = (dir: string) => join(dir, "disk.pid");

/** Mounting and unmounting one sandbox's FUSE disk, one program at a time (two daemons on one image corrupt it). */
function withDiskLock<T>(dir: string, work: () => Promise<T>): Promise<T> {
  return withLock(join(dir, "disk.lock"), work, 2 * startBoundMs());
}

/**
 * The state of a sandbox's FUSE disk, without blocking this program's event loop on the daemon: mounted (its
 * own device at `<dir>/disk`), stale (mounted, its daemon gone: ENOTCONN) or not mounted.
 */
async function fuseState(dir: string): Promise<"mounted" | "stale" | "unmounted"> {
  try {
    const [point, parent] = await Promise.all([stat(join(dir, "disk")), stat(dir)]);
    return point.dev !== parent.dev ? "mounted" : "unmounted";
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ENOTCONN" || code === "ECONNABORTED") return "stale";
    if (code === "ENOENT") return "unmounted";
    throw error;
  }
}

/**
 * Mounts `<dir>/disk.img` at `<dir>/disk` with fuse2fs in the foreground of a detached process of its own (its
 * own session: no signal meant for this program or a sandbox reaches it), records its pid and start time, and
 * returns once the mount is there. fuse2fs ignores SIGPIPE (libfuse), so its stderr, read only until then,
 * may be closed behind it.
 */
async function mountFuse(tools: FuseTools, dir: string): Promise<void> {
  const { image, mountPoint } = imageOf({ dir } as LocalSandboxPaths);
  const made = mountPointAt(mountPoint);
  if (made) throw localError("Provider", `cannot make the mount point of the sandbox's disk: ${made.why}`);
  // Named relative to the sandbox's directory: fuse2fs names the file system after the image as given, and a
  // sandbox reads that name in its mount table (`disk.img`, not the host path of the state root).
  const child = spawn(tools.fuse2fs, ["disk.img", "disk", "-f", "-o", FUSE_OPTIONS], {
    cwd: dir,
    env: TOOL_ENV,
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  let ended: string | undefined;
  child.stderr?.on("data", (chunk: Buffer) => {
    if (stderr.length < 4096) stderr += chunk.toString("utf8");
  });
  child.on("error", (error) => {
    ended = error.message;
  });
  child.on("exit", (code, signal) => {
    ended = signal ? `killed by ${signal}` : `exit ${String(code)}`;
  });
  const bound = startBoundMs();
  const started = Date.now();
  try {
    for (let delay = 1; (await fuseState(dir)) !== "mounted"; delay = Math.min(20, delay * 2)) {
      if (ended !== undefined) throw new Error(stderr.trim() || ended);
      if (Date.now() - started > bound) throw new Error(`no mount after ${Date.now() - started} ms`);
      await sleep(delay);
    }
    const startTime = (await readProcStat(child.pid!))?.startTime;
    await writeFile(daemonFile(dir), `${child.pid} ${startTime ?? 0}\n`, { mode: 0o600 });
  } catch (error) {
    if (ended === undefined && child.pid !== undefined) sendSignal(child.pid, "SIGKILL");
    if ((await fuseState(dir).catch(() => "stale")) !== "unmounted") {
      await run(tools.fusermount, ["-uz", mountPoint]);
    }
    throw localError(
      "Provider",
      `cannot mount the sandbox's disk image ${image} with fuse2fs: ${(error as Error).message}`,
    );
  } finally {
    child.stderr?.destroy();
    child.unref();
  }
}

/** How long a fuse2fs whose file system was unmounted gets to end by itself before it is asked to (SIGTERM). */
const DAEMON_GRACE_MS = 2_000;

/**
 * Waits until the sandbox's fuse2fs has ended (after its unmount it writes the image's last metadata, and a
 * second daemon on the same image before that would corrupt it). A daemon still running after a grace time
 * (its file system, lazily unmounted, still held by something) is sent SIGTERM, on which libfuse ends its
 * loop and fuse2fs closes the image cleanly. `kill`: the image is being deleted, so the daemon is killed at
 * once. Rejects when it outlives the bound.
 */
async function daemonEnded(dir: string, kill: boolean): Promise<void> {
  const text = await readFile(daemonFile(dir), "utf8").catch(() => "");
  const [pid, startTime] = text.trim().split(" ").map(Number);
  if (pid && startTime !== undefined && Number.isInteger(startTime)) {
    const bound = startBoundMs();
    const started = Date.now();
    // Signalled only when it is the same process (pid and start time), never a reused pid.
    const signal = async (name: string) => {
      if (await isProcessAlive(pid, startTime)) sendSignal(pid, name);
    };
    if (kill) await signal("SIGKILL");
    let asked = kill;
    for (let delay = 2; await isProcessAlive(pid, startTime); delay = Math.min(50, delay * 2)) {
      const waited = Date.now() - started;
      if (!asked && waited > DAEMON_GRACE_MS) {
        asked = true;
        await signal("SIGTERM");
      }
      if (waited > bound) {
        throw localError(
          "Provider",
          `the fuse2fs of the sandbox's disk (pid ${pid}) has not ended ${waited} ms after its unmount`,
        );
      }
      await sleep(delay);
    }
  }
  await rm(daemonFile(dir), { force: true });
}

/** Unmounts a sandbox's FUSE disk (lazily when busy) and waits for its daemon to end; `kill`: see daemonEnded. */
async function unmountFuse(tools: FuseTools, dir: string, kill: boolean): Promise<void> {
  const mountPoint = join(dir, "disk");
  if ((await mountTable()).some((mount) => mount.point === mountPoint)) {
    if (!(await run(tools.fusermount, ["-u", mountPoint])).ok) {
      const lazy = await run(tools.fusermount, ["-uz", mountPoint]);
      if (!lazy.ok) throw localError("Provider", `cannot unmount the sandbox's disk: ${lazy.why}`);
    }
  }
  await daemonEnded(dir, kill);
}

/**
 * Takes down the FUSE disk of a sandbox being stopped: no daemon of a stopped sandbox runs on (the next
 * start mounts it again, see `ensureDiskMounted`); its files stay in the image.
 */
export async function detachFuseDisk(paths: LocalSandboxPaths): Promise<void> {
  await withDiskLock(paths.dir, () => unmountFuse(requireFuseTools(), paths.dir, false));
}

/** Mounts a sandbox's FUSE disk when it is not (a stop, a reboot, a daemon that died: its stale mount goes first). */
async function ensureFuseMounted(dir: string): Promise<void> {
  if ((await fuseState(dir)) === "mounted") return;
  const tools = requireFuseTools();
  await withDiskLock(dir, async () => {
    const now = await fuseState(dir);
    if (now === "mounted") return;
    if (now === "stale") await run(tools.fusermount, ["-uz", join(dir, "disk")]);
    // A daemon still running (its file system lazily unmounted, still in use) must end before another starts.
    await daemonEnded(dir, now === "stale");
    if (!existsSync(join(dir, "disk.img"))) {
      throw localError("Provider", `the disk image of the sandbox is missing (${join(dir, "disk.img")})`);
    }
    await mountFuse(tools, dir);
  });
}

/**
 * `attachDisk` unprivileged: the sparse image, made ext4 owned by the host user, mounted with fuse2fs, and its
 * three directories made (`/tmp` sticky and world-writable like a real one; `lost+found` removed, as root
 * does). Undone when a step fails.
 */
async function attachFuseDisk(tools: FuseTools, paths: LocalSandboxPaths, diskMB: number): Promise<void> {
  const { image, mountPoint } = imageOf(paths);
  const sparse = sparseFile(image, Math.max(diskMB, MIN_IMAGE_MB)) ?? mountPointAt(mountPoint);
  if (sparse) throw localError("Provider", `cannot make the sandbox's disk image ${image}: ${sparse.why}`);
  try {
    const made = await run(tools.mkfs, [...fuseMkfsOptions(), image]);
    if (!made.ok) throw localError("Provider", `cannot make the sandbox's disk image ${image}: ${made.why}`);
    await mountFuse(tools, paths.dir);
    await rmdir(join(mountPoint, "lost+found")).catch(() => {});
    for (const [area, mode] of [
      ["workspace", 0o755],
      ["tmp", 0o1777],
      ["home", 0o755],
    ] as const) {
      await mkdir(join(mountPoint, area), { mode });
      await chmod(join(mountPoint, area), mode);
    }
  } catch (error) {
    await unmountFuseBelow(paths.dir).catch(() => {});
    throw error;
  }
}

/** `unmountBelow` unprivileged: every FUSE mount at or below `dir` (lazily when busy), then its daemon killed. */
async function unmountFuseBelow(dir: string): Promise<void> {
  const mounted = () => mountsBelow(dir);
  const points = await mounted();
  if (points.length > 0) {
    const tools = requireFuseTools();
    for (const point of points) {
      if (!(await run(tools.fusermount, ["-u", point])).ok) await run(tools.fusermount, ["-uz", point]);
    }
  }
  const left = await mounted();
  if (left.length > 0) throw localError("Provider", `cannot unmount ${left.join(", ")}`);
  await daemonEnded(dir, true);
}
