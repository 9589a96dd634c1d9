import { SandboxError } from "../errors/sandbox-error.js";

/**
 * The one sandbox-path resolver: `path` as an absolute, normalised sandbox path. A relative path is taken
 * from `workdir` (absolute); repeated slashes collapse, `.` components and trailing slashes go, and `..`
 * is resolved lexically, never above `/` (as `path.posix.resolve` and Go's `filepath.Clean` do). The core
 * hands every driver file method a path in this form; providers use it for paths they compute
 * themselves (a symlink's target, a snapshot's directory).
 *
 * ```ts
 * resolveSandboxPath("a/../b//c/", "/home/user"); // "/home/user/b/c"
 * ```
 */
export function resolveSandboxPath(path: string, workdir = "/"): string {
  if (typeof path !== "string" || path === "") {
    throw new SandboxError("Validation", "a sandbox path must be a non-empty string", { retryable: false });
  }
  if (path.includes("\0")) {
    throw new SandboxError("Validation", "a sandbox path must not contain a NUL character", {
      retryable: false,
    });
  }
  const full = path.startsWith("/") ? path : `${workdir.startsWith("/") ? workdir : `/${workdir}`}/${path}`;
  const parts: string[] = [];
  for (const part of full.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") parts.pop();
    else parts.push(part);
  }
  return `/${parts.join("/")}`;
}
