import { usageError } from "../args/usage-error.js";

/** One side of `sbox cp`: a host path, a path in a sandbox, or stdin/stdout (`-`). */
export type CopyEndpoint =
  | { readonly kind: "host"; readonly path: string }
  | { readonly kind: "sandbox"; readonly id: string; readonly path: string }
  | { readonly kind: "stdio" };

// `[provider:]nativeId:path` — provider names are lowercase; native ids have no ':' or '/'.
const SANDBOX_REF = /^((?:[a-z0-9][a-z0-9-]*:)?[A-Za-z0-9][A-Za-z0-9._-]*):(.*)$/s;

/**
 * Parses a `cp` argument. `ID:/path` (or `provider:id:/path`) names a sandbox path; `-` is stdin/stdout;
 * anything else is a host path. Host paths that contain a colon must start with `/`, `./` or `../`.
 */
export function parseCopyEndpoint(argument: string): CopyEndpoint {
  if (argument === "-") return { kind: "stdio" };
  if (argument === "") throw usageError("sbox cp: an empty path");
  if (/^(\/|\.\.?\/|~)/.test(argument) || argument === "." || argument === "..") {
    return { kind: "host", path: argument };
  }
  const match = SANDBOX_REF.exec(argument);
  if (!match) return { kind: "host", path: argument };
  const path = match[2] ?? "";
  if (path === "")
    throw usageError(`sbox cp: missing the path after ${match[1]}: (e.g. ${match[1]}:/workspace)`);
  return { kind: "sandbox", id: match[1]!, path };
}
