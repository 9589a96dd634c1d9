import { spawnSync } from "node:child_process";
import { accessSync, constants, lstatSync } from "node:fs";
import { delimiter, join } from "node:path";
import { startBoundMs } from "./local-start-wait.js";

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return lstatSync(path).isFile() || lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Finds `bwrap`: the explicit path, else the first on `PATH`, else `/usr/bin/bwrap`. Synchronous, no spawn. */
export function locateBwrap(
  explicit: string | undefined,
  searchPath: string | undefined = process.env.PATH,
): string | undefined {
  if (explicit !== undefined) return isExecutable(explicit) ? explicit : undefined;
  for (const dir of (searchPath ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, "bwrap");
    if (isExecutable(candidate)) return candidate;
  }
  return isExecutable("/usr/bin/bwrap") ? "/usr/bin/bwrap" : undefined;
}

/** Where the host keeps the programs the provider runs besides bubblewrap (never looked up on the user's PATH). */
const SYSTEM_DIRECTORIES = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"];

/** The absolute path of a system program, or `undefined`. */
export function systemProgram(name: string): string | undefined {
  for (const dir of SYSTEM_DIRECTORIES) {
    const candidate = join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** The host programs every bubblewrap sandbox needs besides bubblewrap. */
export interface SandboxPrograms {
  /** util-linux `nsenter`: puts each command into its sandbox's namespaces. */
  readonly nsenter: string;
  /** util-linux `unshare`: makes a root host's sandbox user namespace. */
  readonly unshare: string;
  /** What the namespace holder runs. */
  readonly sleep: string;
}

/** Finds nsenter, unshare and sleep; `undefined` with the missing one's name when one is missing. */
export function locatePrograms(): SandboxPrograms | { missing: string } {
  const found: Record<string, string> = {};
  for (const name of ["nsenter", "unshare", "sleep"]) {
    const path = systemProgram(name);
    if (!path) return { missing: name };
    found[name] = path;
  }
  return found as unknown as SandboxPrograms;
}

/**
 * Runs bubblewrap once with the namespaces and options the provider uses (a user namespace, PID, network, IPC
 * and UTS namespaces, a syscall filter from a descriptor, arguments from a descriptor). Returns `undefined`
 * when it works, else why not (user namespaces disabled, a setuid bubblewrap refusing options...).
 */
export function probeBwrap(bwrapPath: string, shell: string): string | undefined {
  const args = [
    "--unshare-user",
    "--unshare-pid",
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-uts",
    "--ro-bind",
    "/",
    "/",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--cap-drop",
    "ALL",
  ];
  const result = spawnSync(bwrapPath, [...args, shell, "-c", ":"], {
    stdio: ["ignore", "ignore", "pipe"],
    timeout: startBoundMs(),
    env: {},
  });
  if (result.error) return result.error.message;
  if (result.status !== 0) {
    const stderr = result.stderr?.toString("utf8").trim();
    return stderr || `exit status ${String(result.status ?? result.signal)}`;
  }
  const programs = locatePrograms();
  if ("missing" in programs) return `${programs.missing} (util-linux / coreutils) was not found`;
  return undefined;
}
