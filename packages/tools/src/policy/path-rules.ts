/**
 * Path rules: every path a file tool touches must resolve, symlinks included, inside the allowed root,
 * must not match a denied glob, must match an allowed glob when the policy lists any, and must not match a
 * read-only glob when the tool writes.
 */
import { posix } from "node:path";
import { PathGlob } from "./path-glob.js";

/** The path rules of a policy. */
export interface PathRules {
  /** The directory file tools are confined to (default: the sandbox's working directory). */
  root?: string | undefined;
  /** Paths that are never read or written, e.g. `".env"`, `"**\/*.pem"`, `".git"`. */
  deny?: readonly string[] | undefined;
  /** When given, only these paths (under the root) may be touched. */
  allow?: readonly string[] | undefined;
  /** Paths that may be read but never written or removed. */
  readOnly?: readonly string[] | undefined;
}

/** How a tool uses a path. */
export type PathAccess = "read" | "write";

/** Thrown (and turned into a denial) when a path breaks a rule. */
export class PathDenied extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PathDenied";
  }
}

/** Lexically normalises `input` against `base`; refuses empty paths and NUL bytes. */
export function normalizeSandboxPath(input: string, base: string): string {
  if (typeof input !== "string" || input === "") throw new PathDenied("the path is empty");
  if (input.includes("\0")) throw new PathDenied("the path contains a NUL byte");
  const absolute = posix.isAbsolute(input) ? input : posix.join(base, input);
  const normalized = posix.normalize(absolute);
  return normalized.length > 1 ? normalized.replace(/\/+$/, "") : normalized;
}

/** Whether `path` is `root` or below it (both absolute and normalised). */
export function isInside(path: string, root: string): boolean {
  if (root === "/") return true;
  return path === root || path.startsWith(`${root}/`);
}

/** Compiled path rules. */
export class PathPolicy {
  readonly root: string | undefined;
  readonly #deny: PathGlob[];
  readonly #allow: PathGlob[] | undefined;
  readonly #readOnly: PathGlob[];

  constructor(rules: PathRules = {}) {
    this.root = rules.root === undefined ? undefined : normalizeSandboxPath(rules.root, "/");
    this.#deny = (rules.deny ?? []).map((glob) => new PathGlob(glob));
    this.#allow = rules.allow?.map((glob) => new PathGlob(glob));
    this.#readOnly = (rules.readOnly ?? []).map((glob) => new PathGlob(glob));
  }

  /**
   * Checks one path in both forms: as written (lexical) and as it really resolves in the sandbox. Globs
   * are tested against both, so a symlink named `.env` is as denied as the file it points to.
   */
  check(
    paths: { lexical: string; real: string },
    root: { lexical: string; real: string },
    access: PathAccess,
  ): void {
    if (!isInside(paths.lexical, root.lexical)) {
      throw new PathDenied(`${paths.lexical} is outside the allowed directory ${root.lexical}`);
    }
    if (!isInside(paths.real, root.real)) {
      throw new PathDenied(
        `${paths.lexical} resolves to ${paths.real}, outside the allowed directory ${root.lexical}`,
      );
    }
    const both = [
      [paths.lexical, root.lexical],
      [paths.real, root.real],
    ] as const;
    const hit = (globs: readonly PathGlob[]) =>
      globs.find((glob) => both.some(([path, base]) => glob.matches(path, base)));
    const denied = hit(this.#deny);
    if (denied) throw new PathDenied(`${paths.lexical} matches the denied path "${denied.source}"`);
    if (this.#allow !== undefined) {
      const allow = this.#allow;
      const allowed = allow.some((glob) => glob.matches(paths.real, root.real));
      // The root itself stays listable even when only some paths below it are allowed.
      if (!allowed && paths.real !== root.real) {
        throw new PathDenied(`${paths.lexical} is not in an allowed path`);
      }
    }
    if (access === "write") {
      const readOnly = hit(this.#readOnly);
      if (readOnly) throw new PathDenied(`${paths.lexical} is read-only ("${readOnly.source}")`);
    }
  }

  /** Whether a path found while listing or searching may be shown (denied globs hidden). */
  visible(path: string, root: { lexical: string; real: string }): boolean {
    if (this.#deny.some((glob) => glob.matches(path, root.real) || glob.matches(path, root.lexical)))
      return false;
    if (this.#allow !== undefined && !this.#allow.some((glob) => glob.matches(path, root.real))) return false;
    return true;
  }
}
