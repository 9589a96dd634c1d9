/**
 * envd's path rules: `~` and `~/...` are the user's home, a relative path starts at the user's home, an
 * absolute path is taken as given (not cleaned). An empty path means the default working directory.
 */
import { posix } from "node:path";
import { ConnectFailure } from "./e2b-connect-protocol.js";
import type { E2BUser } from "./e2b-machine.js";

/** Resolves `path` for `user`; a NUL byte or `~other` is an invalid argument. */
export function expandAndResolve(path: string, user: E2BUser, defaultWorkdir?: string): string {
  if (typeof path !== "string") throw new ConnectFailure("invalid_argument", "path must be a string");
  if (path.includes("\0")) throw new ConnectFailure("invalid_argument", "path contains a NUL byte");
  let resolved = path === "" ? (defaultWorkdir ?? "") : path;
  if (resolved.startsWith("~")) {
    if (resolved.length > 1 && resolved[1] !== "/") {
      throw new ConnectFailure(
        "invalid_argument",
        `failed to expand path '${resolved}' for user '${user.name}': cannot expand user-specific home dir`,
      );
    }
    resolved = posix.join(user.home, resolved.slice(1));
  }
  if (posix.isAbsolute(resolved)) return resolved;
  return posix.resolve(user.home, resolved);
}
