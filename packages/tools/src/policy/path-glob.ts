/**
 * Path globs of a policy: `*` (within one segment), `**` (any depth), `?`, `[abc]`. A pattern without a
 * slash names a segment anywhere (`.env`, `node_modules`); a pattern with one is anchored at the root (or
 * absolute when it starts with `/`). A pattern matches a path and everything below it.
 */
import { posix } from "node:path";

function escapeRegExpChar(char: string): string {
  return /[\\^$.*+?()[\]{}|/]/.test(char) ? `\\${char}` : char;
}

/** Translates one glob into an anchored regular expression. */
function globRegExp(glob: string): RegExp {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") {
      if (glob[i + 1] === "*") {
        const slashAfter = glob[i + 2] === "/";
        out += slashAfter ? "(?:.*/)?" : ".*";
        i += slashAfter ? 2 : 1;
      } else out += "[^/]*";
    } else if (c === "?") out += "[^/]";
    else if (c === "[") {
      const end = glob.indexOf("]", i + 2);
      if (end === -1) out += "\\[";
      else {
        let body = glob.slice(i + 1, end);
        if (body.startsWith("!")) body = `^${body.slice(1)}`;
        out += `[${body.replace(/\\/g, "\\\\")}]`;
        i = end;
      }
    } else out += escapeRegExpChar(c);
  }
  return new RegExp(`^${out}$`);
}

/** A compiled path glob. */
export class PathGlob {
  readonly #regexp: RegExp;
  readonly #segment: boolean;
  readonly #absolute: boolean;

  constructor(readonly source: string) {
    const trimmed = source.length > 1 ? source.replace(/\/+$/, "") : source;
    this.#segment = !trimmed.includes("/");
    this.#absolute = trimmed.startsWith("/");
    this.#regexp = globRegExp(this.#absolute ? trimmed.slice(1) : trimmed);
  }

  /** Whether `path` (absolute, normalised) under `root` is matched. */
  matches(path: string, root: string): boolean {
    const relative = this.#absolute ? path.slice(1) : posix.relative(root, path);
    if (!this.#absolute && (relative.startsWith("..") || posix.isAbsolute(relative))) return false;
    const segments = relative === "" ? [] : relative.split("/");
    if (this.#segment) return segments.some((segment) => this.#regexp.test(segment));
    for (let length = segments.length; length >= 1; length--) {
      if (this.#regexp.test(segments.slice(0, length).join("/"))) return true;
    }
    return false;
  }
}
