import { SandboxError } from "../errors/sandbox-error.js";
import { shellQuote } from "./shell-quote.js";

/**
 * Validates a path given to a file operation and normalizes its slashes: repeated slashes collapse and a
 * trailing slash is dropped (`/` stays `/`). `.` and `..` are kept: the sandbox resolves them.
 */
export function normalizePath(path: unknown, what = "path"): string {
  if (typeof path !== "string") {
    throw new SandboxError("Validation", `${what} must be a string`, { retryable: false });
  }
  if (path === "") throw new SandboxError("Validation", `${what} must not be empty`, { retryable: false });
  if (path.includes("\0")) {
    throw new SandboxError("Validation", `${what} must not contain a NUL character`, { retryable: false });
  }
  const collapsed = path.replace(/\/{2,}/g, "/");
  return collapsed.length > 1 && collapsed.endsWith("/") ? collapsed.slice(0, -1) : collapsed;
}

/**
 * The path as one quoted shell word that no tool can mistake for an option: a leading `-` gets `./`.
 */
export function shellPath(path: string): string {
  return shellQuote(path.startsWith("-") ? `./${path}` : path);
}

/** The parent directory of a normalized path (`.` for a bare name, `/` for a top-level entry). */
export function parentOf(path: string): string {
  const slash = path.lastIndexOf("/");
  if (slash < 0) return ".";
  if (slash === 0) return "/";
  return path.slice(0, slash);
}

/** The last component of a normalized path (`/` for the root). */
export function baseName(path: string): string {
  if (path === "/") return "/";
  return path.slice(path.lastIndexOf("/") + 1);
}

/** Joins a directory and an entry name. */
export function joinPath(dir: string, name: string): string {
  return dir.endsWith("/") ? `${dir}${name}` : `${dir}/${name}`;
}

/** The absolute form of a normalized path, given the shell's working directory. */
export function absolutePath(path: string, cwd: string): string {
  if (path.startsWith("/")) return path;
  if (path === ".") return cwd;
  return joinPath(cwd, path.startsWith("./") ? path.slice(2) : path);
}

/** A random lowercase hex token, for temporary names that must not collide. */
export function randomToken(bytes = 8): string {
  const values = crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(values, (b) => b.toString(16).padStart(2, "0")).join("");
}
