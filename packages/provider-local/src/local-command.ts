import { realpathSync, statSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { dirname, join } from "node:path";
import { type DriverCommand, EXEC_ARGS_SCRIPT } from "@sbox/core/spec";
import {
  COMMAND_GROUP_PREFIX,
  commandGroup,
  joinFiles,
  processesOf,
  type SandboxCgroup,
  trackingDir,
} from "./local-cgroups.js";
import { diskAreas } from "./local-disk.js";
import { localError } from "./local-errors.js";
import type { HolderRecord } from "./local-holder.js";
import { hostIdentity, SANDBOX_USER } from "./local-identity.js";
import type { ResolvedIsolation } from "./local-isolation.js";
import { hostPrefix, prefixSteps, SYSTEM_PATH, sandboxResources } from "./local-launch.js";
import type { LocalResources } from "./local-limits.js";
import { networkSupport, noNetworkError } from "./local-network.js";
import type { LocalMount } from "./local-options.js";
import {
  hostCwdWithoutIsolation,
  SANDBOX_HOME,
  SANDBOX_TMP,
  type SandboxView,
  sandboxCwd,
} from "./local-paths.js";
import {
  COMMAND_TAG_VARIABLE,
  findTaggedProcesses,
  type ProcessFinder,
  pidNamespaceMembers,
  readProcStat,
  SANDBOX_TAG_VARIABLE,
  taggedProcesses,
} from "./local-procfs.js";
import { seccompFile } from "./local-seccomp-file.js";
import type { LocalSandboxPaths, LocalSandboxRecord } from "./local-state.js";

/** How to start one process, and how to find what it starts. */
export interface LaunchPlan {
  readonly file: string;
  readonly args: readonly string[];
  /** Host directory for `spawn`'s cwd (the launcher's; the command changes to its own inside). */
  readonly cwd: string;
  /** The launcher's environment: fixed, never the caller's (that goes in through bubblewrap's arguments). */
  readonly env: Record<string, string>;
  /** Files holding this start's arguments, to remove once the command runs. */
  readonly launchFiles: readonly string[];
  /** bubblewrap's arguments, to be written to the launcher's descriptor `ARGS_FD` (instead of a file). */
  readonly argsData?: Buffer | undefined;
  /** The command's own cgroup, when the sandbox has cgroups. */
  readonly group?: string | undefined;
  /** Whether `group` goes back for reuse once the command ended (a foreground command's). */
  readonly reusableGroup?: boolean | undefined;
  /** Finds every process of this command, fresh on every call. */
  readonly find: ProcessFinder;
  /** Launchers that catchable signals must spare (they would die of them and orphan the command). */
  readonly spareExes: readonly string[];
}

/** What a command needs to know about its sandbox. */
export interface CommandTarget {
  readonly id: string;
  readonly paths: LocalSandboxPaths;
  readonly record: LocalSandboxRecord;
}

/** A sandbox whose namespaces run: what every command of it joins. */
export interface RunningSandbox {
  readonly holder: HolderRecord;
  readonly cgroup: SandboxCgroup | undefined;
}

/** What to run. */
export interface CommandInput {
  /** A command, or `undefined` for an interactive shell (pty). */
  readonly command: DriverCommand | undefined;
  readonly cwd?: string | undefined;
  readonly env?: Readonly<Record<string, string>> | undefined;
  readonly user?: string | undefined;
  /** Tag of this command's processes (see `COMMAND_TAG_VARIABLE`). */
  readonly tag: string;
  /** Foreground commands get a session of their own; a pty keeps the terminal's. */
  readonly session: "new" | "terminal";
  /** Extra variables set by the provider (TERM for a pty). */
  readonly extraEnv?: Readonly<Record<string, string>> | undefined;
  /** Under bubblewrap: report readiness on READY_FD (the caller provides it) so setup failures can be retried. */
  readonly readyFd?: boolean | undefined;
  /** Background commands take their stderr from COMMAND_STDERR_FD, so bubblewrap's messages stay apart. */
  readonly swapStderr?: boolean | undefined;
  /** Where the start's argument file goes (`<sandbox>/launch`, or a background process's record). */
  readonly launchDir: string;
  /** The interactive shell of a pty without a command. */
  readonly terminalShell?: string | undefined;
  /** A foreground command of this program (it ends with its run): its cgroup may be a finished one's (see `recycleCommandGroup`), its bubblewrap arguments go through a pipe. */
  readonly foreground?: boolean | undefined;
}

/** Settings shared by every command of a provider instance. */
export interface CommandSettings {
  readonly shell: string;
  readonly path: string;
  /** Host paths given to every sandbox. */
  readonly mounts: readonly LocalMount[];
  /** The state root (the syscall filter file lives there). */
  readonly stateRoot: string;
  /** `local({ startTimeoutMs })`: the bound of a sandbox's start-up waits; `undefined`: scaled with the load. */
  readonly startTimeoutMs?: number | undefined;
}

/** The view of `target` under `isolation`: its directories, and the host id of the sandbox user. */
export function viewOf(target: CommandTarget, isolation: ResolvedIsolation): SandboxView {
  const identity = hostIdentity();
  const owner =
    isolation.mode === "bwrap" && identity.root
      ? { uid: identity.sandboxUid, gid: identity.sandboxGid }
      : undefined;
  // With a disk image the host works in the image's directories themselves (one mount) rather than through
  // the three binds over the sandbox's (three mounts): a rename from /workspace to /tmp stays a rename, not
  // EXDEV.
  const areas = target.record.disk === "image" ? diskAreas(target.paths) : target.paths;
  return {
    isolation: isolation.mode,
    workspace: areas.workspace,
    tmp: areas.tmp,
    home: areas.home,
    stateRoot: dirname(target.paths.dir),
    owner,
  };
}

/** Descriptor on which a command under bubblewrap reports that the sandbox was set up and it started. */
export const READY_FD = 4;
/** Descriptor that carries a background command's stderr past bubblewrap's own (see the wrapper). */
export const COMMAND_STDERR_FD = 5;
/** The variable the command's first step changes directory with, then unsets. */
const CWD_VARIABLE = "SBOX_LOCAL_CWD";

/**
 * What every command under bubblewrap does before it runs: report on READY_FD that the sandbox is set up
 * (bubblewrap can fail to set it up, and only this byte tells such a failure, which is safe to retry, from the
 * command's own exit), close the descriptors its launchers used, optionally take its stderr from
 * COMMAND_STDERR_FD, and change to its working directory (failing like `cd` when it is missing).
 */
function sandboxPrefix(ready: boolean, swapStderr: boolean): string {
  const signal = ready ? `printf . >&${READY_FD}; exec ${READY_FD}>&- ` : "exec ";
  const swap = swapStderr ? ` 2>&${COMMAND_STDERR_FD} ${COMMAND_STDERR_FD}>&-` : "";
  return (
    `${signal}3>&- 6>&- 7>&-${swap}; ` +
    `cd -- "$${CWD_VARIABLE}" 2>/dev/null || { printf 'sbox: cannot change directory to %s: No such directory\\n' "$${CWD_VARIABLE}" >&2; exit 1; }; ` +
    `unset ${CWD_VARIABLE}; `
  );
}

// EXEC_ARGS_SCRIPT (core) ends in `exec "$@"`: argv runs without any shell interpretation, and a missing
// program is reported as a shell reports it (`name: command not found`, exit 127) rather than in the
// wrapper's words, the same way with and without bubblewrap. A script runs through `eval` after `set --`, which behaves like
// `sh -c script` (no positional parameters) without a second shell.
function commandArgv(
  shell: string,
  command: DriverCommand | undefined,
  prefix: string,
  terminalShell?: string,
): string[] {
  if (command === undefined) {
    if (prefix === "") return [terminalShell ?? shell];
    return [shell, "-c", `${prefix}exec "$0"`, terminalShell ?? shell];
  }
  if ("shell" in command) {
    return prefix === ""
      ? [shell, "-c", command.shell]
      : [shell, "-c", `${prefix}eval "set --; $1"`, "sh", command.shell];
  }
  if (command.argv.length === 0) throw localError("Validation", "a command needs at least one word");
  return [shell, "-c", `${prefix}${EXEC_ARGS_SCRIPT}`, "sh", ...command.argv];
}

function assertUser(user: string | undefined, isolation: ResolvedIsolation): void {
  if (user === undefined) return;
  if (isolation.mode === "bwrap") {
    if (user === SANDBOX_USER.name) return;
    throw localError(
      "NotSupported",
      `commands in a local sandbox run as ${JSON.stringify(SANDBOX_USER.name)}; running as ${JSON.stringify(user)} is not supported`,
    );
  }
  let current: string | undefined;
  try {
    current = userInfo().username;
  } catch {
    // A uid without an account (os.userInfo throws): there is no name to be asked for.
    current = undefined;
  }
  if (user !== current) {
    throw localError(
      "NotSupported",
      `the local provider runs commands as the host user ${current ?? "(unknown)"}; running as ${JSON.stringify(user)} is not supported`,
    );
  }
}

let launchCounter = 0;

/** Writes bubblewrap's arguments to a file only the provider can read (they hold the command's environment). */
function writeArgsFile(dir: string, tag: string, args: readonly string[]): string {
  const path = join(dir, `${tag}-${++launchCounter}.args`);
  writeFileSync(path, `${args.join("\0")}\0`, { mode: 0o600 });
  return path;
}

let spareCache: string[] | undefined;

/** The executables of the launch chain under bubblewrap, as `/proc/<pid>/exe` shows them. */
function launchExes(isolation: Extract<ResolvedIsolation, { mode: "bwrap" }>): string[] {
  if (!spareCache) {
    spareCache = [isolation.bwrapPath];
    try {
      spareCache.push(realpathSync(isolation.programs.nsenter));
    } catch {
      // not there: the launch fails anyway
    }
  }
  return spareCache;
}

/** A finder for a command's processes: its cgroup, else its tag among the sandbox's, else on the host. */
function commandFinder(
  tag: string,
  group: string | undefined,
  holder: HolderRecord | undefined,
): ProcessFinder {
  if (group !== undefined) {
    return async () => {
      const found = [];
      for (const pid of await processesOf(group)) {
        const stat = await readProcStat(pid);
        if (stat && stat.state !== "Z" && stat.state !== "X") found.push(stat);
      }
      return found;
    };
  }
  if (holder !== undefined) {
    return async () => {
      const members = await pidNamespaceMembers(holder.pidNamespace);
      return findTaggedProcesses(
        COMMAND_TAG_VARIABLE,
        tag,
        members.map((member) => member.pid),
      );
    };
  }
  return taggedProcesses({ name: COMMAND_TAG_VARIABLE, value: tag });
}

/**
 * A finder for the processes of command `tag` started earlier, perhaps by another program: its cgroup, else
 * its tag among the processes of the sandbox's PID namespace (none when the sandbox is not running), else,
 * without isolation, its tag among the host's processes.
 */
export function finderForCommand(
  tag: string,
  cgroup: SandboxCgroup | undefined,
  holder: HolderRecord | undefined,
  bwrap: boolean,
): ProcessFinder {
  if (cgroup)
    return commandFinder(tag, join(trackingDir(cgroup), `${COMMAND_GROUP_PREFIX}${tag}`), undefined);
  if (bwrap && !holder) return async () => [];
  return commandFinder(tag, undefined, holder);
}

/** rlimits a command's launcher sets: all of them without cgroups, else only the file size (disk). */
function launchLimits(resources: LocalResources, cgroup: SandboxCgroup | undefined, bwrap: boolean) {
  return {
    resources,
    shell: "/bin/sh",
    withMemory: cgroup === undefined,
    // Without isolation the process count would be this user's on the whole host.
    withProcesses: cgroup === undefined && bwrap,
  };
}

/**
 * Plans one process. Under bubblewrap the launch is `sh` (joins the sandbox's cgroup, sets its limits) →
 * `nsenter` (into the holder's mount, network, IPC, UTS and PID namespaces; unprivileged, its user namespace
 * first) → `bwrap` (builds the command's view from the holder's, switches to the sandbox user, drops every
 * capability, loads the syscall filter, clears the environment and sets the command's with `--setenv`) →
 * the command. Every launcher runs with a fixed environment and `/` as its directory: nothing the caller
 * passes reaches a host program (the command's environment is in an argument file only the provider can
 * read, never on a command line). Returns a message instead when the working directory does not exist
 * without isolation, so that the command fails like `cd` would, with exit 1.
 */
export function planLaunch(
  settings: CommandSettings,
  isolation: ResolvedIsolation,
  target: CommandTarget,
  input: CommandInput,
  running: RunningSandbox | undefined,
  cgroup: SandboxCgroup | undefined,
): LaunchPlan | { cwdProblem: string } {
  assertUser(input.user, isolation);
  const { paths, record } = target;
  const bwrap = isolation.mode === "bwrap";
  if (record.egress === "block-all" && !bwrap) {
    throw localError(
      "NotSupported",
      `local sandbox ${target.id} has egress blocked, which needs bubblewrap; this provider runs without isolation (${isolation.reason ?? "isolation: none"})`,
    );
  }
  const tags = { [SANDBOX_TAG_VARIABLE]: target.id, [COMMAND_TAG_VARIABLE]: input.tag };
  const launcherEnv = { PATH: SYSTEM_PATH, ...tags };
  const resources = sandboxResources(record);
  const group = cgroup ? commandGroup(cgroup, input.tag, input.foreground === true) : undefined;
  const cgroupFiles = cgroup && group ? joinFiles(cgroup, group) : [];
  const limits = launchLimits(resources, cgroup, bwrap);
  if (!bwrap) {
    const env: Record<string, string> = {
      PATH: settings.path,
      HOME: paths.home,
      TMPDIR: paths.tmp,
      LANG: "C.UTF-8",
      ...input.extraEnv,
      ...record.env,
      ...input.env,
      // Last, so no command can drop them: they let the provider find every process of the sandbox.
      ...tags,
    };
    const hostCwd = hostCwdWithoutIsolation(viewOf(target, isolation), input.cwd);
    let isDirectory = false;
    try {
      isDirectory = statSync(hostCwd).isDirectory();
    } catch {
      isDirectory = false;
    }
    if (!isDirectory) {
      return { cwdProblem: `sbox: cannot change directory to ${input.cwd ?? hostCwd}: No such directory\n` };
    }
    // Without isolation the command's own shell joins the cgroup and sets the limits first: no extra program.
    const steps = prefixSteps({ cgroupFiles, rlimits: { ...limits, shell: settings.shell } });
    const argv = commandArgv(settings.shell, input.command, `${steps}\n`, input.terminalShell);
    return {
      file: argv[0]!,
      args: argv.slice(1),
      cwd: hostCwd,
      env,
      launchFiles: [],
      group,
      reusableGroup: input.foreground === true,
      find: commandFinder(input.tag, group, undefined),
      spareExes: [],
    };
  }
  if (!running) throw localError("Provider", "a bubblewrap command needs its sandbox's namespaces");
  const identity = hostIdentity();
  const { holder } = running;
  const anchor = holder.anchor.pid;
  const sandboxEnv: Record<string, string> = {
    PATH: settings.path,
    HOME: SANDBOX_HOME,
    USER: SANDBOX_USER.name,
    LOGNAME: SANDBOX_USER.name,
    TMPDIR: SANDBOX_TMP,
    LANG: "C.UTF-8",
    ...input.extraEnv,
    ...record.env,
    ...input.env,
    [CWD_VARIABLE]: sandboxCwd(input.cwd),
    ...tags,
  };
  // Without a user-mode stack, allow-all shares the host's network only where the user accepted that
  // (`hostNetwork`); otherwise the command is refused rather than given the host's network.
  const hostShared = holder.network === "host" && record.egress === "allow-all";
  if (hostShared && record.hostNetwork !== true) {
    const support = networkSupport(identity);
    throw noNetworkError(
      support.kind === "host" ? support.reason : "the sandbox's namespaces have none",
      "command",
    );
  }
  const joinNetwork = !hostShared;
  const nsenter = [
    isolation.programs.nsenter,
    ...(identity.root ? [] : ["--preserve-credentials", `--user=/proc/${anchor}/ns/user`]),
    `--mount=/proc/${anchor}/ns/mnt`,
    ...(joinNetwork ? [`--net=/proc/${anchor}/ns/net`] : []),
    `--ipc=/proc/${anchor}/ns/ipc`,
    `--uts=/proc/${anchor}/ns/uts`,
    `--pid=/proc/${anchor}/ns/pid`,
    "--",
  ];
  const seccomp = seccompFile(settings.stateRoot);
  const bwrapOptions = [
    ...(identity.root ? ["--userns", "3"] : ["--unshare-user"]),
    "--uid",
    String(SANDBOX_USER.uid),
    "--gid",
    String(SANDBOX_USER.gid),
    // The holder's view, as it is: the system directories, the sandbox's own, the masks over /proc.
    "--bind",
    "/",
    "/",
    "--dev-bind",
    "/dev",
    "/dev",
    "--cap-drop",
    "ALL",
    ...(input.session === "new" ? ["--new-session"] : []),
    ...(seccomp ? ["--seccomp", "7"] : []),
    "--clearenv",
    ...Object.entries(sandboxEnv).flatMap(([key, value]) => ["--setenv", key, value]),
    "--chdir",
    "/",
  ];
  // A foreground command hands them over through a pipe its launcher inherits (no file to write and remove
  // on the command's way); others through a file, since their launcher may outlive this program.
  const argsData = input.foreground ? Buffer.from(`${bwrapOptions.join("\0")}\0`) : undefined;
  const argsFile = argsData ? undefined : writeArgsFile(input.launchDir, input.tag, bwrapOptions);
  const prefix = hostPrefix({
    anchor: { pid: anchor, startTime: holder.anchor.startTime, userNamespaceFd: identity.root },
    args: argsFile,
    seccomp,
    cgroupFiles,
    rlimits: limits,
  });
  const argv = commandArgv(
    settings.shell,
    input.command,
    sandboxPrefix(input.readyFd === true, input.swapStderr === true),
    input.terminalShell,
  );
  return {
    file: "/bin/sh",
    args: ["-c", prefix, "sbox-launch", ...nsenter, isolation.bwrapPath, "--args", "6", "--", ...argv],
    cwd: "/",
    env: launcherEnv,
    launchFiles: argsFile ? [argsFile] : [],
    ...(argsData ? { argsData } : {}),
    group,
    reusableGroup: input.foreground === true,
    find: commandFinder(input.tag, group, holder),
    spareExes: launchExes(isolation),
  };
}
