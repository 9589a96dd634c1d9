import { homedir } from "node:os";
import { isAbsolute, join, posix, resolve } from "node:path";
import { optionRules, type ProviderOptionRules, validateProviderOptions } from "@sbox/core/spec";
import { LOCAL_PROVIDER_NAME, localError } from "./local-errors.js";

/** How commands are isolated: bubblewrap when available (`auto`), always (`bwrap`), or not at all (`none`). */
export type LocalIsolationRequest = "auto" | "bwrap" | "none";

/** Outbound network policy the local provider can enforce (allow-lists would need a proxy). */
export type LocalEgress = "allow-all" | "block-all";

/** A host path given to every sandbox of a provider, at a path of the user's choosing. */
export interface LocalMount {
  /** Absolute host path (a directory or a file); it must exist when a sandbox starts. */
  host: string;
  /** Absolute path inside the sandbox; it may not overlap the sandbox's own or system directories. */
  sandbox: string;
  /** Default `true`: the sandbox can read but not change it. */
  readOnly?: boolean | undefined;
}

/** Options of {@link local}. */
export interface LocalOptions {
  /**
   * State root holding one directory per sandbox. Default: `$SBOX_HOME/local` when `SBOX_HOME` is set,
   * else `~/.sbox/local`.
   */
  root?: string | undefined;
  /** Default `"auto"`: bubblewrap when it is installed and works, else no isolation (with one warning). */
  isolation?: LocalIsolationRequest | undefined;
  /**
   * Default network policy of new sandboxes (default `"allow-all"`); `"block-all"` needs bubblewrap. With
   * bubblewrap, `"allow-all"` is outbound access through a user-mode network stack in the sandbox's own network
   * namespace: the host's loopback and the host's own addresses are unreachable unless `hostLoopback: true`
   * opens the host's loopback (reached at the sandbox's gateway address, 10.0.2.2).
   *
   * Where no user-mode stack is usable (slirp4netns missing, or `/dev/net/tun` not usable by this user), the
   * network fails closed: new sandboxes get `"block-all"` by default (one warning) and an explicit
   * `"allow-all"` is refused with `NotSupported`, unless `hostNetwork: true` lets such sandboxes share the
   * host's network namespace instead (every host service, loopback included, in reach: trusted code only).
   */
  network?:
    | {
        egress?: LocalEgress | undefined;
        hostLoopback?: boolean | undefined;
        hostNetwork?: boolean | undefined;
      }
    | undefined;
  /**
   * Host paths every sandbox sees (read-only unless `readOnly: false`). Nothing of the host beyond the system
   * directories is visible otherwise: no home directories, no `/root`, no checkout, no state root.
   */
  mounts?: readonly LocalMount[] | undefined;
  /**
   * Under bubblewrap, each sandbox gets an ext4 image of its own, `resources.diskMB` large (sparse: it takes on
   * the host's disk what is written, at most that), so that its `/workspace`, `/tmp` and `/home/user` together
   * can never hold more (ENOSPC inside). Default: wherever one can be made (as root, with loop devices and
   * mkfs.ext4; as a normal user, with fuse2fs and fusermount3 from `apt-get install fuse2fs fuse3` and
   * `/dev/fuse` open to the user); elsewhere each file a sandbox writes is limited to `diskMB`, not their total
   * (one warning, and `getInfo().raw.limits.enforced.disk` says why). `true` insists: refused with
   * `NotSupported` where no image can be mounted. `false` opts out. As root each sandbox with one holds four
   * mounts (the image and three binds) below the state root, which is made a private mount of itself; as a
   * normal user one FUSE mount and its fuse2fs daemon while the sandbox is not stopped.
   */
  diskImage?: boolean | undefined;
  /**
   * How long a sandbox's processes may take to start (its namespace holder, or another program's start of it)
   * before the command fails with `Timeout`, in milliseconds. Default: 30 s times the host's load per CPU (at
   * least 30 s, at most 5 minutes), so that a loaded CI machine is waited for and a start that never happens
   * still ends.
   */
  startTimeoutMs?: number | undefined;
  /** Path of the `bwrap` executable (default: looked up on `PATH`, then `/usr/bin/bwrap`). */
  bwrapPath?: string | undefined;
  /** Shell used for string commands (default `/bin/sh`). */
  shell?: string | undefined;
  /**
   * `PATH` of commands in the sandbox (default: the host's `PATH`). No other host variable is passed on:
   * the host environment often holds credentials.
   */
  path?: string | undefined;
}

/** The state root for `options`: explicit root, else `$SBOX_HOME/local`, else `~/.sbox/local`. */
export function resolveStateRoot(options: LocalOptions, env: NodeJS.ProcessEnv = process.env): string {
  if (options.root !== undefined) {
    if (typeof options.root !== "string" || options.root === "" || options.root.includes("\0")) {
      throw localError("Validation", "local({ root }) must be a non-empty path");
    }
    return resolve(options.root);
  }
  const home = env.SBOX_HOME;
  if (home !== undefined && home !== "") {
    if (!isAbsolute(home))
      throw localError("Validation", `SBOX_HOME must be an absolute path, got ${JSON.stringify(home)}`);
    return join(resolve(home), "local");
  }
  return join(homedir(), ".sbox", "local");
}

/** Every option of {@link local} and what it takes: anything else is refused, not ignored. */
const LOCAL_OPTION_RULES: ProviderOptionRules = {
  root: optionRules.nonEmptyString(),
  isolation: optionRules.oneOf(["auto", "bwrap", "none"]),
  network: optionRules.object({
    egress: optionRules.custom('"allow-all" or "block-all"', (value) =>
      value === "allow-all" || value === "block-all"
        ? undefined
        : `must be "allow-all" or "block-all" (allow-lists are not supported locally), got ${JSON.stringify(value)}`,
    ),
    hostLoopback: optionRules.boolean(),
    hostNetwork: optionRules.boolean(),
  }),
  // Each mount's fields are checked by validateMounts, with messages that name the mount.
  mounts: optionRules.custom("an array of { host, sandbox, readOnly? }", (value) =>
    Array.isArray(value) ? undefined : "must be an array",
  ),
  diskImage: optionRules.boolean(),
  startTimeoutMs: optionRules.positiveInteger("a positive whole number of milliseconds"),
  bwrapPath: optionRules.nonEmptyString(),
  shell: optionRules.nonEmptyString(),
  path: optionRules.nonEmptyString(),
};

/** Validates the options object itself (shapes only; nothing touches the filesystem). */
export function validateLocalOptions(options: LocalOptions): void {
  if (typeof options !== "object" || options === null)
    throw localError("Validation", "local() options must be an object");
  validateProviderOptions(LOCAL_PROVIDER_NAME, options, LOCAL_OPTION_RULES);
  const isolation = options.isolation;
  if (isolation !== undefined && isolation !== "auto" && isolation !== "bwrap" && isolation !== "none") {
    throw localError(
      "Validation",
      `isolation must be "auto", "bwrap" or "none", got ${JSON.stringify(isolation)}`,
    );
  }
  const egress = options.network?.egress;
  if (egress !== undefined && egress !== "allow-all" && egress !== "block-all") {
    throw localError(
      "Validation",
      `network.egress must be "allow-all" or "block-all" (allow-lists are not supported locally), got ${JSON.stringify(egress)}`,
    );
  }
  const hostLoopback = options.network?.hostLoopback;
  if (hostLoopback !== undefined && typeof hostLoopback !== "boolean") {
    throw localError("Validation", "network.hostLoopback must be a boolean");
  }
  const hostNetwork = options.network?.hostNetwork;
  if (hostNetwork !== undefined && typeof hostNetwork !== "boolean") {
    throw localError("Validation", "network.hostNetwork must be a boolean");
  }
  if (options.mounts !== undefined) validateMounts(options.mounts);
  for (const key of ["bwrapPath", "shell", "path"] as const) {
    const value = options[key];
    if (value !== undefined && (typeof value !== "string" || value === "" || value.includes("\0"))) {
      throw localError("Validation", `local({ ${key} }) must be a non-empty string`);
    }
  }
}

/** Sandbox paths a user mount may not cover, be covered by, or sit inside: the sandbox's own and the system's. */
const RESERVED_SANDBOX_PATHS = [
  "/workspace",
  "/tmp",
  "/home/user",
  "/proc",
  "/dev",
  "/etc",
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/run",
  "/var",
];

/** True when one of the two absolute, normalized paths is the other or lies below it. */
export function pathsOverlap(a: string, b: string): boolean {
  const within = (inner: string, outer: string) =>
    outer === "/" || inner === outer || inner.startsWith(`${outer}/`);
  return within(a, b) || within(b, a);
}

function validateMountPath(value: unknown, what: string): string {
  if (typeof value !== "string" || value === "" || value.includes("\0") || !posix.isAbsolute(value)) {
    throw localError("Validation", `mounts: ${what} must be an absolute path, got ${JSON.stringify(value)}`);
  }
  const normalized = posix.normalize(value);
  if (normalized.length > 1 && normalized.endsWith("/")) return normalized.slice(0, -1);
  return normalized;
}

/** Validates the shape of `local({ mounts })`; whether each host path exists is checked when a sandbox starts. */
function validateMounts(mounts: readonly LocalMount[]): void {
  if (!Array.isArray(mounts)) throw localError("Validation", "mounts must be an array");
  const seen: string[] = [];
  for (const mount of mounts) {
    if (typeof mount !== "object" || mount === null)
      throw localError("Validation", "each mount must be an object");
    validateMountPath(mount.host, "host");
    const sandbox = validateMountPath(mount.sandbox, "sandbox");
    if (sandbox === "/") throw localError("Validation", "mounts: / cannot be replaced");
    const reserved = RESERVED_SANDBOX_PATHS.find((path) => pathsOverlap(path, sandbox));
    if (reserved) {
      throw localError(
        "Validation",
        `mounts: ${sandbox} overlaps ${reserved}, which the sandbox itself provides`,
      );
    }
    const other = seen.find((path) => pathsOverlap(path, sandbox));
    if (other) throw localError("Validation", `mounts: ${sandbox} overlaps another mount at ${other}`);
    seen.push(sandbox);
    if (mount.readOnly !== undefined && typeof mount.readOnly !== "boolean") {
      throw localError("Validation", "mounts: readOnly must be a boolean");
    }
  }
}

/** The mounts with normalized paths (after `validateLocalOptions`). */
export function normalizedMounts(options: LocalOptions): LocalMount[] {
  return (options.mounts ?? []).map((mount) => ({
    host: validateMountPath(mount.host, "host"),
    sandbox: validateMountPath(mount.sandbox, "sandbox"),
    readOnly: mount.readOnly !== false,
  }));
}
