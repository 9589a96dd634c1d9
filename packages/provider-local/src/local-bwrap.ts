import { spawnSync } from "node:child_process";
import { accessSync, constants, lstatSync, readdirSync, readlinkSync, statSync } from "node:fs";
import { delimiter, join } from "node:path";

/** The fixed sandbox paths under bubblewrap. */
export const SANDBOX_WORKSPACE = "/workspace";
/** The sandbox's private, persistent `/tmp`. */
export const SANDBOX_TMP = "/tmp";

// Top-level host entries that are replaced inside the sandbox rather than bound from the host.
const REPLACED = new Set(["proc", "dev", "tmp", "workspace"]);

/** One entry of the host's `/`: bound read-only, or recreated as the same symlink. */
export type RootEntry =
  | { readonly kind: "bind"; readonly path: string }
  | { readonly kind: "symlink"; readonly path: string; readonly target: string };

let rootEntries: readonly RootEntry[] | undefined;

/**
 * The host's top-level entries, read once per process. `/` itself cannot be bound read-only because
 * `/workspace` has to be created in it; binding every top-level entry gives the same view.
 */
export function hostRootEntries(): readonly RootEntry[] {
  if (rootEntries) return rootEntries;
  const entries: RootEntry[] = [];
  for (const name of readdirSync("/").sort()) {
    if (REPLACED.has(name)) continue;
    const path = `/${name}`;
    try {
      const info = lstatSync(path);
      if (info.isSymbolicLink()) entries.push({ kind: "symlink", path, target: readlinkSync(path) });
      else entries.push({ kind: "bind", path });
    } catch {
      // Vanished between readdir and lstat: nothing to bind.
    }
  }
  rootEntries = entries;
  return entries;
}

/** Directories under /run that hold container and session daemons' control sockets: hidden entirely. */
const MASKED_RUN_DIRECTORIES = ["docker", "containerd", "podman", "crio", "libpod", "user"];
/** Control sockets of system daemons below /run that are not in a masked directory. */
const MASKED_RUN_SOCKETS = ["dbus/system_bus_socket", "systemd/private"];

type SocketMask = { readonly kind: "dir" | "socket"; readonly path: string };

const FINGERPRINTED_DIRECTORIES = [
  "/run",
  ...new Set(MASKED_RUN_SOCKETS.map((relative) => `/run/${relative.split("/")[0]}`)),
];

let maskCache: { readonly fingerprint: string; readonly masks: readonly SocketMask[] } | undefined;

/**
 * What changes when a socket or directory the masks depend on appears or goes: the modification times of
 * /run and of the directories holding MASKED_RUN_SOCKETS (creating, removing or renaming an entry updates
 * its directory's mtime, kept in nanoseconds on tmpfs). Three stats instead of listing /run and lstat-ing
 * every entry on every command.
 */
function runFingerprint(): string {
  return FINGERPRINTED_DIRECTORIES.map((dir) => {
    // Milliseconds as a double keep sub-microsecond precision today: enough to tell two changes apart.
    const info = statSync(dir, { throwIfNoEntry: false });
    return info ? `${info.ino}:${info.mtimeMs}:${info.ctimeMs}` : "-";
  }).join("|");
}

/**
 * Host daemon sockets the sandbox must not reach: a read-only bind does not stop `connect()`, and the Docker
 * socket alone would hand a command the whole host. Every socket directly in /run, a few well-known ones
 * below it, and the directories of container runtimes are masked. Daemons come and go, so the list is
 * computed again whenever /run (or a directory of a well-known socket) changed since the last command.
 * Sockets elsewhere, and abstract sockets while the host network is shared, stay reachable.
 */
export function hostSocketMasks(): readonly SocketMask[] {
  const fingerprint = runFingerprint();
  if (maskCache?.fingerprint === fingerprint) return maskCache.masks;
  const value: SocketMask[] = [];
  const add = (path: string) => {
    try {
      const info = lstatSync(path);
      if (info.isSocket()) value.push({ kind: "socket", path });
      else if (info.isDirectory() && MASKED_RUN_DIRECTORIES.some((name) => path === `/run/${name}`)) {
        value.push({ kind: "dir", path });
      }
    } catch {
      // absent
    }
  };
  try {
    if (lstatSync("/run").isDirectory()) {
      for (const name of readdirSync("/run").sort()) add(`/run/${name}`);
      for (const relative of MASKED_RUN_SOCKETS) add(`/run/${relative}`);
    }
  } catch {
    // no /run
  }
  maskCache = { fingerprint, masks: value };
  return value;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return lstatSync(path).isFile() || lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Finds `bwrap`: the explicit path, else the first on `PATH`, else `/usr/bin/bwrap`. Synchronous, no spawn. */
export function locateBwrap(
  explicit: string | undefined,
  searchPath: string | undefined = process.env.PATH,
): string | undefined {
  if (explicit !== undefined) return isExecutable(explicit) ? explicit : undefined;
  for (const dir of (searchPath ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, "bwrap");
    if (isExecutable(candidate)) return candidate;
  }
  return isExecutable("/usr/bin/bwrap") ? "/usr/bin/bwrap" : undefined;
}

/** Whether the current process runs as root (bubblewrap then keeps capabilities unless told to drop them). */
export function runningAsRoot(): boolean {
  return typeof process.getuid === "function" && process.getuid() === 0;
}

/**
 * Runs bubblewrap once with the namespaces the provider uses. Returns `undefined` when it works, else why
 * not (user namespaces disabled, setuid bwrap refusing options...).
 */
export function probeBwrap(bwrapPath: string, shell: string): string | undefined {
  const args = ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-pid", "--unshare-net"];
  if (runningAsRoot()) args.push("--cap-drop", "ALL");
  const result = spawnSync(bwrapPath, [...args, shell, "-c", ":"], {
    stdio: ["ignore", "ignore", "pipe"],
    timeout: 10_000,
  });
  if (result.error) return result.error.message;
  if (result.status !== 0) {
    const stderr = result.stderr?.toString("utf8").trim();
    return stderr || `exit status ${String(result.status ?? result.signal)}`;
  }
  return undefined;
}

/** What one bubblewrap invocation needs. */
export interface BwrapPlan {
  readonly bwrapPath: string;
  /** Host directory mounted read-write at `/workspace`. */
  readonly workspace: string;
  /** Host directory mounted read-write at `/tmp`. */
  readonly tmp: string;
  /** Working directory inside the sandbox. */
  readonly cwd: string;
  /** `--unshare-net`: no network but loopback. */
  readonly unshareNet: boolean;
  /** `--die-with-parent`: foreground commands die with the host program; background ones must not. */
  readonly dieWithParent: boolean;
  /** Host directories hidden behind an empty tmpfs (the state root: other sandboxes' files). */
  readonly hide: readonly string[];
  /**
   * The PID namespace: a new one for this command, or the sandbox's own, joined through an inherited
   * descriptor, so processes of every command see each other and detached ones outlive their command.
   */
  readonly pid: { readonly join: number } | "new";
}

/** The bubblewrap arguments (without the command) for `plan`. */
export function bwrapArgs(plan: BwrapPlan): string[] {
  const args: string[] = [];
  for (const entry of hostRootEntries()) {
    if (entry.kind === "symlink") args.push("--symlink", entry.target, entry.path);
    else args.push("--ro-bind", entry.path, entry.path);
  }
  if (hostRootEntries().some((entry) => entry.path === "/run" && entry.kind === "bind")) {
    for (const mask of hostSocketMasks()) {
      if (mask.kind === "dir") args.push("--tmpfs", mask.path);
      else args.push("--ro-bind", "/dev/null", mask.path);
    }
  }
  for (const path of plan.hide) args.push("--tmpfs", path);
  args.push("--proc", "/proc", "--dev", "/dev");
  args.push("--bind", plan.tmp, SANDBOX_TMP, "--bind", plan.workspace, SANDBOX_WORKSPACE);
  if (plan.pid === "new") args.push("--unshare-pid");
  else args.push("--pidns", String(plan.pid.join));
  if (plan.unshareNet) args.push("--unshare-net");
  if (plan.dieWithParent) args.push("--die-with-parent");
  // As root, bubblewrap would keep every capability: a process could remount / read-write.
  if (runningAsRoot()) args.push("--cap-drop", "ALL");
  args.push("--chdir", plan.cwd);
  return args;
}
