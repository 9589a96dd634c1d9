import { readFileSync } from "node:fs";
import { join } from "node:path";
import { shellQuote } from "@sbox/core/spec";
import {
  type CgroupSupport,
  cgroupSupport,
  createSandboxCgroup,
  type SandboxCgroup,
} from "./local-cgroups.js";
import type { CommandTarget } from "./local-command.js";
import {
  DEFAULT_DISK_MB,
  DEFAULT_PIDS,
  defaultMemoryMB,
  type LocalResources,
  rlimitCommands,
} from "./local-limits.js";
import { writeFileAtomic } from "./local-state.js";

/** The `PATH` every launcher runs with: the host's system directories only, never the caller's. */
export const SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin";

/** The resources of a sandbox: its record's, or the defaults for a record written before there were any. */
export function sandboxResources(record: CommandTarget["record"]): LocalResources {
  return record.resources ?? { pids: DEFAULT_PIDS, memoryMB: defaultMemoryMB(), diskMB: DEFAULT_DISK_MB };
}

function cgroupFile(target: CommandTarget): string {
  return join(target.paths.dir, "cgroup.json");
}

/** The cgroup recorded for a sandbox, if one was made. */
export function recordedCgroup(target: CommandTarget): SandboxCgroup | undefined {
  try {
    const parsed = JSON.parse(readFileSync(cgroupFile(target), "utf8")) as SandboxCgroup;
    if (parsed.kind === "v2" && typeof parsed.dir === "string") return parsed;
    if (parsed.kind === "v1" && typeof parsed.dirs?.pids === "string") return parsed;
  } catch {
    // none yet
  }
  return undefined;
}

/**
 * The sandbox's cgroup: the recorded one, else one made now (and recorded, so every program finds the same),
 * or `undefined` where this host lets no cgroup be made (limits are then rlimits).
 */
export async function sandboxCgroupFor(
  target: CommandTarget,
  resources: LocalResources,
  support: CgroupSupport = cgroupSupport(),
): Promise<SandboxCgroup | undefined> {
  const recorded = recordedCgroup(target);
  if (recorded) return recorded;
  if (support.kind === "none") return undefined;
  const cgroup = createSandboxCgroup(target.id, {
    pids: resources.pids,
    memoryBytes: resources.memoryMB * 1024 * 1024,
    vcpus: resources.vcpus,
  });
  await writeFileAtomic(cgroupFile(target), JSON.stringify(cgroup));
  return cgroup;
}

/** What a launcher does on the host before it becomes the next program of the chain. */
export interface HostPrefix {
  /** `cgroup.procs` files the launcher writes its pid to (everything it starts then belongs to the sandbox). */
  readonly cgroupFiles: readonly string[];
  /** rlimits to set (where no cgroup could be made, and for file sizes). */
  readonly rlimits?:
    | {
        readonly resources: LocalResources;
        readonly shell: string;
        readonly withMemory: boolean;
        readonly withProcesses?: boolean | undefined;
      }
    | undefined;
  /** The syscall filter file, opened as fd 7 for bubblewrap's `--seccomp 7`. */
  readonly seccomp?: string | undefined;
  /** bubblewrap's arguments file, opened as fd 6 for `--args 6`. */
  readonly args?: string | undefined;
  /**
   * The process whose namespaces are joined: checked to still be that process (its start time) right
   * before the chain opens `/proc/<pid>/ns/*`, so a reused pid cannot lead a command into a stranger's
   * namespaces; with `userNamespaceFd`, its user namespace is opened as fd 3 for bubblewrap's `--userns 3`.
   */
  readonly anchor?:
    | { readonly pid: number; readonly startTime: number; readonly userNamespaceFd: boolean }
    | undefined;
}

/**
 * The shell script of a launcher (`sh -c SCRIPT name program args...`): it checks and opens what the chain
 * needs, joins the sandbox's cgroup, sets limits, then execs its arguments. Anything that fails exits with
 * 125 before any sandbox code ran, which the caller treats as a start that failed.
 */
export function hostPrefix(prefix: HostPrefix): string {
  return `${prefixSteps(prefix)}\nexec "$@"`;
}

/** The steps of `hostPrefix` without its final exec: what a command's own shell can run first. */
export function prefixSteps(prefix: HostPrefix): string {
  const lines = [`fail() { printf 'sbox: %s\\n' "$1" >&2; exit 125; }`];
  if (prefix.anchor) {
    const { pid, startTime } = prefix.anchor;
    lines.push(
      `alive() { read -r s </proc/${pid}/stat || return 1; set -- $s; [ "\${22}" = ${startTime} ]; }`,
      `alive || fail "the sandbox's namespaces are gone (process ${pid} ended)"`,
    );
    if (prefix.anchor.userNamespaceFd) lines.push(`exec 3</proc/${pid}/ns/user`);
  }
  if (prefix.args !== undefined) lines.push(`exec 6<${shellQuote(prefix.args)}`);
  if (prefix.seccomp !== undefined) lines.push(`exec 7<${shellQuote(prefix.seccomp)}`);
  for (const file of prefix.cgroupFiles) {
    lines.push(
      `echo $$ >${shellQuote(file)} || fail "cannot join the sandbox's cgroup ${file.replace(/["$`\\]/g, "")}"`,
    );
  }
  if (prefix.rlimits) {
    const { resources, shell, withMemory, withProcesses } = prefix.rlimits;
    lines.push(
      `${rlimitCommands(shell, resources, withMemory, withProcesses !== false)} || fail "cannot set the sandbox's limits"`,
    );
  }
  return lines.join("\n");
}
