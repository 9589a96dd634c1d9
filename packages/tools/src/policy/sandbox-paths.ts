/**
 * Resolves paths the way the sandbox sees them: symlinks followed inside the sandbox itself (one `sh`
 * run as the sandbox user), so a link that points out of the allowed root is caught before a file tool
 * uses it. A path whose resolution fails is refused, never assumed harmless.
 */
import type { Sandbox } from "@sbox/core";
import { normalizeSandboxPath, PathDenied } from "./path-rules.js";

// $1: absolute normalised path; $2: 1 to follow the last component, 0 to resolve only its parent.
// Walks up to the deepest existing ancestor, resolves that physically (cd -P / readlink -f), then appends
// the part that does not exist yet. Trailing newlines of names survive because of the "x" sentinel.
const RESOLVE_SCRIPT = `p=$1; rest=""
if [ "$2" = 0 ] && [ "$p" != / ]; then rest="/\${p##*/}"; p=\${p%/*}; [ -n "$p" ] || p=/; fi
while [ "$p" != / ] && [ ! -e "$p" ] && [ ! -L "$p" ]; do rest="/\${p##*/}$rest"; p=\${p%/*}; [ -n "$p" ] || p=/; done
if [ -d "$p" ]; then r=$(cd -P -- "$p" && pwd -P && printf x) || exit 3
else r=$(readlink -f -- "$p" && printf x) || exit 3; fi
r=\${r%x}; r=\${r%?}
printf "%s%s" "$r" "$rest"`;

/** A path as written and as it resolves in the sandbox. */
export interface ResolvedPath {
  readonly lexical: string;
  readonly real: string;
}

/** Resolves paths inside one sandbox; caches the working directory and the root. */
export class SandboxPaths {
  #workdir: Promise<string> | undefined;
  #root: Promise<ResolvedPath> | undefined;

  constructor(
    readonly sandbox: Sandbox,
    readonly configuredRoot: string | undefined,
  ) {}

  /** The sandbox's working directory (where relative paths and commands start), physical. */
  workdir(): Promise<string> {
    this.#workdir ??= Promise.resolve(this.sandbox.commands.run(["sh", "-c", "pwd -P"])).then(
      (result) => {
        const dir = result.stdout.replace(/\n$/, "");
        if (result.exitCode !== 0 || !dir.startsWith("/")) {
          this.#workdir = undefined;
          throw new PathDenied("the sandbox's working directory could not be determined");
        }
        return dir;
      },
      (error: unknown) => {
        this.#workdir = undefined;
        throw error;
      },
    );
    return this.#workdir as Promise<string>;
  }

  /** The allowed root: configured, else the working directory; as written and resolved. */
  root(): Promise<ResolvedPath> {
    this.#root ??= (async () => {
      const lexical = this.configuredRoot ?? (await this.workdir());
      const real = await this.#realpath(lexical, true);
      return { lexical, real };
    })().catch((error: unknown) => {
      this.#root = undefined;
      throw error;
    });
    return this.#root;
  }

  /** Normalises `input` against the root (relative paths) without touching the sandbox. */
  async lexical(input: string): Promise<string> {
    const root = await this.root();
    return normalizeSandboxPath(input, root.lexical);
  }

  /** Resolves an already normalised path in the sandbox (symlinks followed; the last one only if asked). */
  async resolve(lexical: string, followLast: boolean): Promise<ResolvedPath> {
    return { lexical, real: await this.#realpath(lexical, followLast) };
  }

  async #realpath(path: string, followLast: boolean): Promise<string> {
    const result = await this.sandbox.commands.run([
      "sh",
      "-c",
      RESOLVE_SCRIPT,
      "sh",
      path,
      followLast ? "1" : "0",
    ]);
    if (result.exitCode !== 0 || !result.stdout.startsWith("/")) {
      throw new PathDenied(`${path} could not be resolved in the sandbox, so it is refused`);
    }
    return normalizeSandboxPath(result.stdout, "/");
  }
}
