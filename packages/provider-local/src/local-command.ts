import { statSync } from "node:fs";
import { userInfo } from "node:os";
import { type DriverCommand, EXEC_ARGS_SCRIPT } from "@sbox/core/spec";
import { bwrapArgs, SANDBOX_TMP, SANDBOX_WORKSPACE } from "./local-bwrap.js";
import { localError } from "./local-errors.js";
import type { ResolvedIsolation } from "./local-isolation.js";
import type { NamespaceCache } from "./local-namespace-cache.js";
import { hostCwdWithoutIsolation, type SandboxView, sandboxCwd } from "./local-paths.js";
import { COMMAND_TAG_VARIABLE, SANDBOX_TAG_VARIABLE } from "./local-procfs.js";
import type { LocalSandboxPaths, LocalSandboxRecord } from "./local-state.js";

/** How to start one process: the executable, its arguments, host cwd and environment. */
export interface LaunchPlan {
  readonly file: string;
  readonly args: readonly string[];
  /** Host directory for `spawn`'s cwd (under bubblewrap the sandbox cwd is set with `--chdir`). */
  readonly cwd: string;
  readonly env: Record<string, string>;
}

/** What a command needs to know about its sandbox. */
export interface CommandTarget {
  readonly id: string;
  readonly paths: LocalSandboxPaths;
  readonly record: LocalSandboxRecord;
}

/** What to run. */
export interface CommandInput {
  /** A command, or `undefined` for an interactive login shell (pty). */
  readonly command: DriverCommand | undefined;
  readonly cwd?: string | undefined;
  readonly env?: Readonly<Record<string, string>> | undefined;
  readonly user?: string | undefined;
  /** Tag of this command's processes (see `COMMAND_TAG_VARIABLE`). */
  readonly tag: string;
  /** Foreground commands die with the host program; background ones survive it. */
  readonly foreground: boolean;
  /** Extra variables set by the provider (TERM for a pty). */
  readonly extraEnv?: Readonly<Record<string, string>> | undefined;
  /** Under bubblewrap: report readiness on READY_FD (the caller provides it) so setup failures can be retried. */
  readonly readyFd?: boolean | undefined;
  /** Descriptor number (in the child) of the sandbox's PID namespace to join; a new one when absent. */
  readonly pidNamespaceFd?: number | undefined;
}

/** Settings shared by every command of a provider instance. */
export interface CommandSettings {
  readonly shell: string;
  readonly path: string;
  /** Host directories hidden inside the sandbox (the state root). */
  readonly hide: readonly string[];
  /** PID namespaces of this provider instance's sandboxes, kept open between commands. */
  readonly namespaces: NamespaceCache;
}

/** The view of `target` under `isolation`. */
export function viewOf(target: CommandTarget, isolation: ResolvedIsolation): SandboxView {
  return { isolation: isolation.mode, workspace: target.paths.workspace, tmp: target.paths.tmp };
}

/** Descriptor on which a command under bubblewrap reports that the sandbox was set up and it started. */
export const READY_FD = 4;
/** Descriptor that carries a background command's stderr past bubblewrap's own (see the wrapper). */
export const COMMAND_STDERR_FD = 5;

/**
 * Under bubblewrap the command first writes one byte to READY_FD (then closes it): bubblewrap can fail to
 * set the sandbox up (a host mount vanishing while it is bound, e.g. a container's), and only this byte
 * tells such a failure, which is safe to retry, from the command's own exit. With `swapStderr` it also
 * takes its stderr from COMMAND_STDERR_FD, so bubblewrap's messages can be kept apart.
 */
function readyPrefix(ready: boolean, swapStderr: boolean): string {
  if (!ready) return "";
  const swap = swapStderr ? ` 2>&${COMMAND_STDERR_FD} ${COMMAND_STDERR_FD}>&-` : "";
  return `printf . >&${READY_FD}; exec ${READY_FD}>&-${swap}; `;
}

// EXEC_ARGS_SCRIPT (core) ends in `exec "$@"`: argv runs without any shell interpretation, and a missing
// program is reported as a shell reports it (`name: command not found`, exit 127) rather than in the
// wrapper's words, the same way with and without bubblewrap. A script runs through `eval` after `set --`, which behaves like
// `sh -c script` (no positional parameters) without a second shell.
function commandArgv(shell: string, command: DriverCommand | undefined, prefix: string): string[] {
  if (command === undefined) return [shell];
  if ("shell" in command) {
    return prefix === ""
      ? [shell, "-c", command.shell]
      : [shell, "-c", `${prefix}eval "set --; $1"`, "sh", command.shell];
  }
  if (command.argv.length === 0) throw localError("Validation", "a command needs at least one word");
  return [shell, "-c", `${prefix}${EXEC_ARGS_SCRIPT}`, "sh", ...command.argv];
}

function assertUser(user: string | undefined): void {
  if (user === undefined) return;
  let current: string | undefined;
  try {
    current = userInfo().username;
  } catch {
    current = undefined;
  }
  if (user !== current) {
    throw localError(
      "NotSupported",
      `the local provider runs commands as the host user ${current ?? "(unknown)"}; running as ${JSON.stringify(user)} is not supported`,
    );
  }
}

/**
 * Plans one process. Returns a message instead when the working directory does not exist without
 * isolation (bubblewrap reports that itself), so that the command fails like `cd` would, with exit 1.
 */
export function planLaunch(
  settings: CommandSettings,
  isolation: ResolvedIsolation,
  target: CommandTarget,
  input: CommandInput,
): LaunchPlan | { cwdProblem: string } {
  assertUser(input.user);
  const { paths, record } = target;
  const bwrap = isolation.mode === "bwrap";
  if (record.egress === "block-all" && !bwrap) {
    throw localError(
      "NotSupported",
      `local sandbox ${target.id} has egress blocked, which needs bubblewrap; this provider runs without isolation (${isolation.reason ?? "isolation: none"})`,
    );
  }
  const env: Record<string, string> = {
    PATH: settings.path,
    HOME: bwrap ? SANDBOX_WORKSPACE : paths.workspace,
    TMPDIR: bwrap ? SANDBOX_TMP : paths.tmp,
    LANG: "C.UTF-8",
    ...input.extraEnv,
    ...record.env,
    ...input.env,
    // Last, so no command can drop them: they let the provider find every process of the sandbox.
    [SANDBOX_TAG_VARIABLE]: target.id,
    [COMMAND_TAG_VARIABLE]: input.tag,
  };
  const argv = commandArgv(
    settings.shell,
    input.command,
    readyPrefix(bwrap && input.command !== undefined && input.readyFd === true, !input.foreground),
  );
  // Checked on the host for both modes (outside /workspace and /tmp the sandbox sees the host's files): a
  // missing directory fails the command like `cd` would, instead of failing bubblewrap's setup.
  const hostCwd = hostCwdWithoutIsolation(viewOf(target, { mode: "none", reason: "" }), input.cwd);
  let isDirectory = false;
  try {
    isDirectory = statSync(hostCwd).isDirectory();
  } catch {
    isDirectory = false;
  }
  if (!isDirectory) {
    return { cwdProblem: `sbox: cannot change directory to ${input.cwd ?? hostCwd}: No such directory\n` };
  }
  if (bwrap) {
    const args = bwrapArgs({
      bwrapPath: isolation.bwrapPath,
      workspace: paths.workspace,
      tmp: paths.tmp,
      cwd: sandboxCwd(input.cwd),
      unshareNet: record.egress === "block-all",
      dieWithParent: input.foreground,
      hide: settings.hide,
      pid: input.pidNamespaceFd === undefined ? "new" : { join: input.pidNamespaceFd },
    });
    return { file: isolation.bwrapPath, args: [...args, "--", ...argv], cwd: paths.workspace, env };
  }
  return { file: argv[0]!, args: argv.slice(1), cwd: hostCwd, env };
}
