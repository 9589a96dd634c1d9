import { lstat, readlink, realpath } from "node:fs/promises";
import { posix } from "node:path";
import { SANDBOX_TMP, SANDBOX_WORKSPACE } from "./local-bwrap.js";
import { localError } from "./local-errors.js";

/**
 * The two places a sandbox owns: `/workspace` (the default cwd) and its private `/tmp`. The files API can
 * reach these and nothing else; every other path is outside the sandbox.
 */
export interface SandboxView {
  /** Whether commands see the sandbox paths (`bwrap`) or host paths (`none`). */
  readonly isolation: "bwrap" | "none";
  /** Host directory behind `/workspace`. */
  readonly workspace: string;
  /** Host directory behind `/tmp`. */
  readonly tmp: string;
}

/** A path resolved inside the sandbox. */
export interface ResolvedPath {
  /**
   * The path as commands see it, which the API reports back: `/workspace/a/b` under bubblewrap, the host
   * path without isolation.
   */
  readonly sandboxPath: string;
  /** The host path that holds it. */
  readonly hostPath: string;
  /** True when it is `/workspace` or `/tmp` itself. */
  readonly isAreaRoot: boolean;
}

const AREAS = {
  workspace: SANDBOX_WORKSPACE,
  tmp: SANDBOX_TMP,
} as const;
type AreaName = keyof typeof AREAS;

const MAX_SYMLINK_HOPS = 40;

function components(path: string): string[] {
  return path.split("/").filter((part) => part !== "" && part !== ".");
}

function areaHost(view: SandboxView, area: AreaName): string {
  return area === "workspace" ? view.workspace : view.tmp;
}

/**
 * The components of an absolute sandbox path for `path` as the API received it: relative paths are taken
 * from `/workspace`. Without isolation commands see host paths, so the host directories of the sandbox are
 * accepted as aliases of `/workspace` and `/tmp`.
 */
function sandboxComponents(view: SandboxView, path: string): string[] {
  if (!path.startsWith("/")) return ["workspace", ...components(path)];
  if (view.isolation === "none") {
    for (const area of ["workspace", "tmp"] as const) {
      const host = areaHost(view, area);
      if (path === host || path.startsWith(`${host}/`)) return [area, ...components(path.slice(host.length))];
    }
  }
  return components(path);
}

function outside(path: string, via?: { link: string; target: string }): Error {
  if (via) {
    return localError(
      "Validation",
      `path ${JSON.stringify(path)} goes through the symlink ${via.link} -> ${JSON.stringify(via.target)}, which points outside the sandbox; symlinks are never followed out of /workspace and /tmp`,
    );
  }
  return localError(
    "Validation",
    `path ${JSON.stringify(path)} is outside the sandbox: only /workspace (and relative paths), and /tmp are reachable, and ".." may not leave them`,
  );
}

/**
 * Resolves an API path to a host path without ever leaving the sandbox. Every component is checked with
 * `lstat`; a symlink is read and its target is resolved again as a sandbox path (an absolute target means
 * a sandbox path, not a host path), so a link can never lead the provider to a host file. `..` that would
 * leave `/workspace` or `/tmp` is refused. With `followFinal: false` the last component is not followed
 * (stat, remove, rename act on the link itself).
 */
export async function resolveSandboxPath(
  view: SandboxView,
  path: string,
  options: { followFinal: boolean },
): Promise<ResolvedPath> {
  if (typeof path !== "string" || path === "" || path.includes("\0")) {
    throw localError("Validation", "path must be a non-empty string without NUL characters");
  }
  const queue = sandboxComponents(view, path);
  const stack: string[] = [];
  let hops = 0;
  let via: { link: string; target: string } | undefined;
  let missing = false;
  while (queue.length > 0) {
    const part = queue.shift()!;
    if (part === "..") {
      if (stack.length <= 1) throw outside(path, via);
      stack.pop();
      continue;
    }
    if (stack.length === 0) {
      if (part !== "workspace" && part !== "tmp") throw outside(path, via);
      stack.push(part);
      continue;
    }
    stack.push(part);
    if (missing) continue;
    const isFinal = queue.length === 0;
    if (isFinal && !options.followFinal) continue;
    const host = hostPathOf(view, stack);
    let isLink = false;
    try {
      isLink = (await lstat(host)).isSymbolicLink();
    } catch (error) {
      const code = (error as { code?: string }).code;
      // Nothing further down can be a symlink; the operation itself reports the missing path.
      if (code === "ENOENT" || code === "ENOTDIR") {
        missing = true;
        continue;
      }
      throw error;
    }
    if (!isLink) continue;
    if (++hops > MAX_SYMLINK_HOPS) {
      throw localError("Validation", `path ${JSON.stringify(path)}: too many levels of symbolic links`);
    }
    const target = await readlink(host);
    via = { link: `/${stack.join("/")}`, target };
    stack.pop();
    if (target.startsWith("/")) {
      stack.length = 0;
      queue.unshift(...sandboxComponents(view, target));
    } else {
      queue.unshift(...components(target));
    }
  }
  if (stack.length === 0) throw outside(path, via);
  const hostPath = hostPathOf(view, stack);
  return {
    // Without isolation commands see host paths, so the API reports those too: a path from files.list
    // can be handed to a command as is.
    sandboxPath: view.isolation === "none" ? hostPath : `/${stack.join("/")}`,
    hostPath,
    isAreaRoot: stack.length === 1,
  };
}

function hostPathOf(view: SandboxView, stack: readonly string[]): string {
  const [area, ...rest] = stack;
  const base = areaHost(view, area as AreaName);
  return rest.length === 0 ? base : `${base}/${rest.join("/")}`;
}

/** The sandbox path of an entry `name` inside the directory at sandbox path `dir`. */
export function childSandboxPath(dir: string, name: string): string {
  return posix.join(dir, name);
}

/**
 * After opening a host path, checks through `/proc/self/fd` where the descriptor really points: if a process
 * in the sandbox swapped a directory for a symlink between resolution and open, the file is outside and the
 * operation is refused.
 */
export async function assertDescriptorInside(view: SandboxView, fd: number, path: string): Promise<void> {
  const [actual, workspace, tmp] = await Promise.all([
    readlink(`/proc/self/fd/${fd}`),
    realpath(view.workspace),
    realpath(view.tmp),
  ]);
  const inside = (base: string) => actual === base || actual.startsWith(`${base}/`);
  if (!inside(workspace) && !inside(tmp)) throw outside(path);
}

/**
 * The host working directory for a command without isolation: `/workspace...` and relative paths map into
 * the workspace, `/tmp...` into the sandbox's tmp, other absolute paths are host paths.
 */
export function hostCwdWithoutIsolation(view: SandboxView, cwd: string | undefined): string {
  if (cwd === undefined) return view.workspace;
  if (!cwd.startsWith("/")) return posix.join(view.workspace, cwd);
  const normalized = posix.normalize(cwd);
  // The sandbox's own host directories first: under /tmp they would otherwise look like the /tmp alias.
  for (const host of [view.workspace, view.tmp]) {
    if (normalized === host || normalized.startsWith(`${host}/`)) return normalized;
  }
  for (const area of ["workspace", "tmp"] as const) {
    const prefix = AREAS[area];
    if (normalized === prefix || normalized.startsWith(`${prefix}/`)) {
      return posix.join(areaHost(view, area), normalized.slice(prefix.length));
    }
  }
  return normalized;
}

/** The working directory inside bubblewrap: relative paths are taken from `/workspace`. */
export function sandboxCwd(cwd: string | undefined): string {
  if (cwd === undefined) return SANDBOX_WORKSPACE;
  return cwd.startsWith("/") ? posix.normalize(cwd) : posix.join(SANDBOX_WORKSPACE, cwd);
}
