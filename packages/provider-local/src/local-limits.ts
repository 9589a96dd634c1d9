import { spawnSync } from "node:child_process";
import { cpus, totalmem } from "node:os";
import type { SandboxSpec } from "@sbox/core/spec";
import { type CgroupSupport, cgroupSupport } from "./local-cgroups.js";
import { localError } from "./local-errors.js";
import { startBoundMs } from "./local-start-wait.js";

/** The resources of one sandbox, as recorded in its record (the spec's, or the defaults). */
export interface LocalResources {
  /** Processes and threads, all of the sandbox's together. */
  readonly pids: number;
  readonly memoryMB: number;
  /** CPUs; `undefined`: no hard limit (sandbox processes only weigh less than the host's). */
  readonly vcpus?: number | undefined;
  /** Size limit of what the sandbox writes: its directories together (where a disk image can be made), each file, and its `/dev/shm`. */
  readonly diskMB: number;
}

/** Processes and threads a sandbox may have when the spec says nothing (a fork bomb stops there). */
export const DEFAULT_PIDS = 1024;
/** The default memory limit: 2 GiB, or half the host's memory on a smaller host. */
export function defaultMemoryMB(): number {
  return Math.min(2048, Math.floor(totalmem() / 1024 / 1024 / 2));
}
/** The default size limit of files written in a sandbox, and of its `/dev/shm`. */
export const DEFAULT_DISK_MB = 1024;
/** `/dev/shm` never exceeds this (Docker's default is 64 MiB). */
const SHM_MAX_MB = 64;

function positive(value: unknown, field: string, minimum: number): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < minimum) {
    throw localError(
      "Validation",
      `resources.${field} must be a number of at least ${minimum}, got ${String(value)}`,
    );
  }
  return value;
}

/**
 * The resources of a new sandbox from its spec: given values validated, defaults for the rest. A GPU is
 * refused; a CPU limit is refused where no cgroup can be made (rlimits cannot express one), since a limit
 * that is not enforced is not accepted.
 */
export function resolveResources(
  spec: SandboxSpec,
  support: CgroupSupport = cgroupSupport(),
): LocalResources {
  const requested = spec.resources ?? {};
  if (requested.gpu !== undefined)
    throw localError("Validation", "resources.gpu is not supported by the local provider");
  const memoryMB =
    requested.memoryMB === undefined
      ? defaultMemoryMB()
      : Math.floor(positive(requested.memoryMB, "memoryMB", 16));
  const diskMB =
    requested.diskMB === undefined ? DEFAULT_DISK_MB : Math.floor(positive(requested.diskMB, "diskMB", 1));
  let vcpus: number | undefined;
  if (requested.vcpus !== undefined) {
    vcpus = positive(requested.vcpus, "vcpus", 0.01);
    if (vcpus > cpus().length) {
      throw localError("Validation", `resources.vcpus ${vcpus} exceeds this host's ${cpus().length} CPUs`);
    }
    if (support.kind === "none") {
      throw localError(
        "Validation",
        `resources.vcpus cannot be enforced here: ${support.reason}, and rlimits cannot limit CPU bandwidth`,
      );
    }
  }
  return { pids: DEFAULT_PIDS, memoryMB, diskMB, ...(vcpus === undefined ? {} : { vcpus }) };
}

/** Size of the sandbox's `/dev/shm`, in bytes. */
export function shmBytes(resources: LocalResources): number {
  return Math.min(resources.diskMB, SHM_MAX_MB, resources.memoryMB) * 1024 * 1024;
}

/** How the host shell's `ulimit` spells the limits the fallback needs. */
interface ShellUlimit {
  /** The option for the number of processes (`-u` in bash, `-p` in dash and busybox). */
  readonly processes: string;
  /** Bytes per unit of `ulimit -f` (512 in dash, 1024 in bash). */
  readonly fileUnit: number;
}

const ulimitProbes = new Map<string, ShellUlimit | undefined>();

/** Finds out, once per shell, how it sets limits, by setting them and reading `/proc/self/limits` back. */
export function shellUlimit(shell: string): ShellUlimit | undefined {
  if (ulimitProbes.has(shell)) return ulimitProbes.get(shell);
  let found: ShellUlimit | undefined;
  for (const processes of ["-u", "-p"]) {
    const result = spawnSync(
      shell,
      ["-c", `ulimit ${processes} 4321 && ulimit -f 8 && cat /proc/self/limits`],
      {
        encoding: "utf8",
        timeout: startBoundMs(),
        env: { PATH: "/usr/bin:/bin" },
      },
    );
    if (result.status !== 0) continue;
    const processesSet = /^Max processes\s+4321\s/m.test(result.stdout);
    const file = /^Max file size\s+(\d+)\s/m.exec(result.stdout);
    if (processesSet && file) {
      found = { processes, fileUnit: Number(file[1]) / 8 };
      break;
    }
  }
  ulimitProbes.set(shell, found);
  return found;
}

/**
 * Shell commands that set the per-process limits every sandbox process inherits: the number of processes
 * (counted per user namespace, so it bounds the whole sandbox), the data segment (memory a process can
 * allocate) and the size of any file it writes. Hard limits, so no process can raise them again.
 */
export function rlimitCommands(
  shell: string,
  resources: LocalResources,
  withMemory: boolean,
  withProcesses = true,
): string {
  const ulimit = shellUlimit(shell);
  if (!ulimit) {
    throw localError("Provider", `cannot set resource limits with ${shell}: its ulimit is not understood`);
  }
  // Without -H or -S, ulimit sets the soft and the hard limit in one call.
  const both = (option: string, value: number) => `ulimit ${option} ${value}`;
  const parts = [both("-f", Math.floor((resources.diskMB * 1024 * 1024) / ulimit.fileUnit))];
  if (withProcesses) parts.push(both(ulimit.processes, resources.pids));
  if (withMemory) parts.push(both("-d", resources.memoryMB * 1024));
  return parts.join(" && ");
}

/** What a sandbox's limits are enforced by, for `getInfo().raw` and the warning when cgroups are missing. */
export function describeEnforcement(
  resources: LocalResources,
  support: { readonly kind: "v1" | "v2" } | { readonly kind: "none"; readonly reason: string },
  disk:
    | { readonly image: true; readonly mount: "loop" | "fuse" }
    | { readonly image: false; readonly reason: string },
): Record<string, unknown> {
  const common = {
    pids: resources.pids,
    memoryMB: resources.memoryMB,
    diskMB: resources.diskMB,
    ...(resources.vcpus === undefined ? {} : { vcpus: resources.vcpus }),
  };
  const mounted =
    disk.image && disk.mount === "fuse"
      ? "mounted with fuse2fs by the host user, outside the sandbox"
      : "loop-mounted";
  const diskEnforcement = disk.image
    ? `/workspace, /tmp and /home/user together (a disk image of their own, ext4, ${mounted}), each file written (RLIMIT_FSIZE), and /dev/shm size`
    : `per file written (RLIMIT_FSIZE) and /dev/shm size; not their total (${disk.reason})`;
  if (support.kind === "none") {
    return {
      ...common,
      mechanism: "rlimit",
      reason: support.reason,
      enforced: {
        pids: "processes and threads of the sandbox together (RLIMIT_NPROC of its user namespace)",
        memory: "per process (RLIMIT_DATA), not for the sandbox as a whole",
        disk: diskEnforcement,
        cpu: "not limited",
      },
    };
  }
  return {
    ...common,
    mechanism: `cgroup-${support.kind}`,
    enforced: {
      pids: "processes and threads of the sandbox together (pids controller)",
      memory: "the sandbox as a whole, no swap (memory controller)",
      disk: diskEnforcement,
      cpu:
        resources.vcpus === undefined
          ? "lower weight than host processes, no hard limit"
          : `${resources.vcpus} CPUs (cpu controller)`,
    },
  };
}
