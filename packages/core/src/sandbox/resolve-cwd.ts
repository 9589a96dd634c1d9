import { resolveSandboxPath } from "../spec/sandbox-paths.js";
import type { SandboxContext } from "./sandbox-context.js";

/**
 * A command's `cwd` as the absolute path it names: a relative one resolves against the sandbox's working
 * directory, as relative file paths do, so a provider that takes the cwd itself (and may need it absolute)
 * sees the same directory a shell `cd` would enter.
 */
export async function resolveCwd(
  context: SandboxContext,
  cwd: string | undefined,
): Promise<string | undefined> {
  if (cwd === undefined || cwd.startsWith("/")) return cwd;
  return resolveSandboxPath(cwd, await context.runtime.workdir(context.handle));
}
