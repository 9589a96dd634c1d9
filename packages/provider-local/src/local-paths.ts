import { posix } from "node:path";
import { localError } from "./local-errors.js";

/** The fixed sandbox paths under bubblewrap. */
export const SANDBOX_WORKSPACE = "/workspace";
/** The sandbox's private, persistent `/tmp`. */
export const SANDBOX_TMP = "/tmp";
/** The sandbox user's home directory. */
export const SANDBOX_HOME = "/home/user";

/** The places a sandbox owns; the files API reaches these and nothing else. */
export type AreaName = "workspace" | "tmp" | "home";

/** Where each area appears inside the sandbox. */
export const AREA_PATHS: Readonly<Record<AreaName, string>> = {
  workspace: SANDBOX_WORKSPACE,
  tmp: SANDBOX_TMP,
  home: SANDBOX_HOME,
};

/** Areas by the components of their sandbox path, longest first, so `/home/user` is matched as a whole. */
const AREA_COMPONENTS: readonly (readonly [AreaName, readonly string[]])[] = (
  Object.entries(AREA_PATHS) as [AreaName, string][]
)
  .map(([area, path]) => [area, components(path)] as const)
  .sort((a, b) => b[1].length - a[1].length);

/**
 * The sandbox's own directories, and who must own what the host creates in them. `/workspace` is the default
 * working directory; every other path is outside the sandbox.
 */
export interface SandboxView {
  /** Whether commands see the sandbox paths (`bwrap`) or host paths (`none`). */
  readonly isolation: "bwrap" | "none";
  /** Host directory behind `/workspace`. */
  readonly workspace: string;
  /** Host directory behind `/tmp`. */
  readonly tmp: string;
  /** Host directory behind `/home/user`. */
  readonly home: string;
  /**
   * Host uid and gid that files created by the host must belong to, so the sandbox user can change them
   * (set when the host program is root and the sandbox user is mapped to another host id).
   */
  readonly owner?: { readonly uid: number; readonly gid: number } | undefined;
}

/** The components of `path`, without empty ones and `.`. */
export function components(path: string): string[] {
  return path.split("/").filter((part) => part !== "" && part !== ".");
}

/** The host directory behind `area`. */
export function areaHost(view: SandboxView, area: AreaName): string {
  return view[area];
}

/** A path split into the area it lies in and the components below the area's root. */
export interface AreaPath {
  readonly area: AreaName;
  readonly rest: string[];
}

/**
 * Which area an absolute sandbox path lies in, with the components below it, or `undefined` when it lies
 * outside every area. `..` components are kept: the caller resolves them against what it walked.
 */
export function areaOf(view: SandboxView, path: string): AreaPath | undefined {
  if (!path.startsWith("/")) return { area: "workspace", rest: components(path) };
  if (view.isolation === "none") {
    // Without isolation commands see host paths, so the sandbox's host directories are aliases of its areas.
    for (const area of ["workspace", "tmp", "home"] as const) {
      const host = areaHost(view, area);
      if (path === host || path.startsWith(`${host}/`))
        return { area, rest: components(path.slice(host.length)) };
    }
  }
  const parts = components(path);
  for (const [area, prefix] of AREA_COMPONENTS) {
    if (prefix.every((part, index) => parts[index] === part))
      return { area, rest: parts.slice(prefix.length) };
  }
  return undefined;
}

/** The path a command sees for `rest` below `area`: the sandbox path, or the host path without isolation. */
export function visiblePath(view: SandboxView, area: AreaName, rest: readonly string[]): string {
  const base = view.isolation === "none" ? areaHost(view, area) : AREA_PATHS[area];
  return rest.length === 0 ? base : `${base}/${rest.join("/")}`;
}

/** The error for a path outside the sandbox, naming the symlink it went through when there was one. */
export function outsideError(path: string, via?: { link: string; target: string }): Error {
  if (via) {
    return localError(
      "Validation",
      `path ${JSON.stringify(path)} goes through the symlink ${via.link} -> ${JSON.stringify(via.target)}, which points outside the sandbox; symlinks are never followed out of /workspace, /tmp and /home/user`,
    );
  }
  return localError(
    "Validation",
    `path ${JSON.stringify(path)} is outside the sandbox: only /workspace (and relative paths), /tmp and /home/user are reachable, and ".." may not leave them`,
  );
}

/** The sandbox path of an entry `name` inside the directory at sandbox path `dir`. */
export function childSandboxPath(dir: string, name: string): string {
  return posix.join(dir, name);
}

/**
 * The host working directory for a command without isolation: `/workspace...` and relative paths map into
 * the workspace, `/tmp...` into the sandbox's tmp, `/home/user...` into its home, other absolute paths are
 * host paths.
 */
export function hostCwdWithoutIsolation(view: SandboxView, cwd: string | undefined): string {
  if (cwd === undefined) return view.workspace;
  if (!cwd.startsWith("/")) return posix.join(view.workspace, cwd);
  const normalized = posix.normalize(cwd);
  // The sandbox's own host directories first: under /tmp they would otherwise look like the /tmp alias.
  for (const host of [view.workspace, view.tmp, view.home]) {
    if (normalized === host || normalized.startsWith(`${host}/`)) return normalized;
  }
  for (const [area, prefix] of Object.entries(AREA_PATHS) as [AreaName, string][]) {
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
