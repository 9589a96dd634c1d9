import { realpathSync } from "node:fs";
import { locateBwrap, locatePrograms, probeBwrap, type SandboxPrograms } from "./local-bwrap.js";
import { localError } from "./local-errors.js";
import type { LocalIsolationRequest } from "./local-options.js";

/** The isolation a provider instance really uses. */
export type ResolvedIsolation =
  | {
      readonly mode: "bwrap";
      readonly bwrapPath: string;
      /** nsenter, unshare and sleep, found on the host's system directories. */
      readonly programs: SandboxPrograms;
      readonly reason?: undefined;
    }
  | { readonly mode: "none"; readonly bwrapPath?: undefined; readonly reason: string };

let warned = false;
const probes = new Map<string, string | undefined>();

/** One probe per bubblewrap and shell per process: every provider instance (a second client too) shares it. */
function probeOnce(bwrapPath: string, shell: string): string | undefined {
  const key = `${bwrapPath}\0${shell}`;
  if (!probes.has(key)) probes.set(key, probeBwrap(bwrapPath, shell));
  return probes.get(key);
}

/**
 * Decides the isolation once, on first use (never at import): `bwrap` needs a working bubblewrap and fails
 * with a clear error otherwise; `auto` falls back to none with a single process-wide warning.
 */
export function resolveIsolation(
  requested: LocalIsolationRequest,
  options: { bwrapPath?: string | undefined; shell: string },
): ResolvedIsolation {
  if (requested === "none") return { mode: "none", reason: 'isolation: "none" was requested' };
  const found = locateBwrap(options.bwrapPath);
  const problem = found
    ? probeOnce(found, options.shell)
    : `bubblewrap (bwrap) was not found${options.bwrapPath ? ` at ${options.bwrapPath}` : " on PATH or at /usr/bin/bwrap"}`;
  // The real path: processes are recognized as bubblewrap by /proc/<pid>/exe, which is always resolved.
  const programs = locatePrograms();
  if (found && problem === undefined && !("missing" in programs)) {
    return { mode: "bwrap", bwrapPath: realpathSync(found), programs };
  }
  if (requested === "bwrap") {
    throw localError(
      "Provider",
      `isolation "bwrap" was requested but bubblewrap cannot be used: ${problem}. Install it (e.g. apt-get install bubblewrap) or use isolation "auto" or "none".`,
    );
  }
  const reason = `bubblewrap unavailable: ${problem}`;
  if (!warned) {
    warned = true;
    process.emitWarning(
      `sbox local: ${reason}; sandboxes run WITHOUT isolation (commands run on the host as this user).`,
      { code: "SBOX_LOCAL_NO_ISOLATION" },
    );
  }
  return { mode: "none", reason };
}
