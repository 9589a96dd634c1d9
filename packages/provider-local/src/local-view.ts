import { existsSync, lstatSync, readlinkSync } from "node:fs";
import type { LocalMount } from "./local-options.js";
import { SANDBOX_HOME, SANDBOX_TMP, SANDBOX_WORKSPACE } from "./local-paths.js";

/** System directories every program needs, bound read-only (or recreated as the symlink they are on the host). */
const SYSTEM_DIRECTORIES = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/**
 * What programs need from the host's `/etc`, and nothing else: the dynamic loader's configuration, TLS
 * certificates, name service and protocol tables, the time zone, alternatives, shell profiles, terminal and
 * MIME databases. Never `shadow`, `sudoers`, ssh host keys, `machine-id` or package manager credentials.
 * `passwd`, `group`, `hosts`, `hostname` and `resolv.conf` are the sandbox's own (see `SYNTHETIC_ETC_FILES`).
 */
const ETC_ENTRIES = [
  "alternatives",
  "bash.bashrc",
  "bashrc",
  "ca-certificates",
  "ca-certificates.conf",
  "crypto-policies",
  "debian_version",
  "environment",
  "fonts",
  "gai.conf",
  "host.conf",
  "inputrc",
  "issue",
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "locale.alias",
  "locale.conf",
  "localtime",
  "lsb-release",
  "magic",
  "magic.mime",
  "mailcap",
  "manpath.config",
  "mime.types",
  "nanorc",
  "networks",
  "nsswitch.conf",
  "os-release",
  "pki",
  "profile",
  "profile.d",
  "protocols",
  "python3",
  "rpc",
  "services",
  "shells",
  "ssh/ssh_config",
  "ssh/ssh_config.d",
  "ssl",
  "terminfo",
  "timezone",
  "vim",
  "wgetrc",
  "xdg",
];

/** Files of `/etc` the provider writes for each sandbox (under `<sandbox>/etc/`) and binds read-only. */
export const SYNTHETIC_ETC_FILES = ["passwd", "group", "hosts", "hostname", "resolv.conf"] as const;

/**
 * The file (next to the synthetic `/etc` files) that stands for the kernel's boot id inside the sandbox:
 * the host's identifies the host's boot, so each sandbox gets its own, new each time it starts (see
 * `writeEtc`), as a VM's changes with each boot.
 */
export const SANDBOX_BOOT_ID_FILE = "boot_id";
const BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id";

/** Files under `/proc` that only expose the host kernel (Docker masks the same ones): replaced by /dev/null. */
const MASKED_PROC_FILES = [
  "/proc/kcore",
  "/proc/keys",
  "/proc/latency_stats",
  "/proc/sched_debug",
  "/proc/timer_list",
  "/proc/timer_stats",
];
/** Directories under `/proc` that only expose host hardware: replaced by an empty directory. */
const MASKED_PROC_DIRECTORIES = ["/proc/acpi", "/proc/scsi"];
/** Writable kernel interfaces under `/proc`: bound read-only on top of the sandbox's own `/proc`. */
const READ_ONLY_PROC = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"];

/** What a sandbox's view is made of. */
export interface ViewPlan {
  /** Host directories behind `/workspace`, `/tmp` and `/home/user`. */
  readonly workspace: string;
  readonly tmp: string;
  readonly home: string;
  /** Host directory holding the synthetic `/etc` files. */
  readonly etc: string;
  /** Host paths the user explicitly gave the sandbox. */
  readonly mounts: readonly LocalMount[];
  /** Size of `/dev/shm`, in bytes. */
  readonly shmBytes: number;
  /**
   * The sandbox's own cgroup directories and where they appear inside, read-only (`/sys/fs/cgroup` on
   * cgroup v2, `/sys/fs/cgroup/<controller>` on v1): programs inside (the core's metrics emulation among
   * them) read the sandbox's memory and CPU use there instead of the host's `/proc/meminfo`. Nothing else
   * of the host's cgroups is visible, and nothing can be written.
   */
  readonly cgroups?: readonly { readonly host: string; readonly sandbox: string }[] | undefined;
}

/** The host's system directories, bound read-only, or recreated as the symlinks they are on the host. */
export function systemDirectoryArgs(): string[] {
  const args: string[] = [];
  for (const path of SYSTEM_DIRECTORIES) {
    let info: ReturnType<typeof lstatSync> | undefined;
    try {
      info = lstatSync(path);
    } catch {
      continue;
    }
    if (info.isSymbolicLink()) args.push("--symlink", readlinkSync(path), path);
    else if (info.isDirectory()) args.push("--ro-bind", path, path);
  }
  return args;
}

/** The bubblewrap arguments that build a sandbox's filesystem view: deny by default, only what is listed. */
export function viewArgs(plan: ViewPlan): string[] {
  const args = systemDirectoryArgs();
  args.push("--dir", "/etc");
  for (const entry of ETC_ENTRIES) {
    const path = `/etc/${entry}`;
    if (existsSync(path)) args.push("--ro-bind", path, path);
  }
  for (const name of SYNTHETIC_ETC_FILES) args.push("--ro-bind", `${plan.etc}/${name}`, `/etc/${name}`);
  args.push("--symlink", "/proc/self/mounts", "/etc/mtab");
  args.push("--proc", "/proc");
  for (const path of READ_ONLY_PROC) if (existsSync(path)) args.push("--ro-bind", path, path);
  if (existsSync(BOOT_ID_PATH)) args.push("--ro-bind", `${plan.etc}/${SANDBOX_BOOT_ID_FILE}`, BOOT_ID_PATH);
  for (const path of MASKED_PROC_FILES) if (existsSync(path)) args.push("--ro-bind", "/dev/null", path);
  for (const path of MASKED_PROC_DIRECTORIES) if (existsSync(path)) args.push("--tmpfs", path);
  args.push("--dev", "/dev", "--size", String(plan.shmBytes), "--tmpfs", "/dev/shm");
  args.push("--tmpfs", "/run", "--dir", "/var", "--symlink", "../tmp", "/var/tmp");
  args.push("--bind", plan.workspace, SANDBOX_WORKSPACE, "--bind", plan.tmp, SANDBOX_TMP);
  args.push("--dir", "/home", "--bind", plan.home, SANDBOX_HOME);
  const made = new Set<string>();
  const cgroups = plan.cgroups ?? [];
  if (cgroups.length > 0) {
    // Made here rather than by bubblewrap, whose own parents come out mode 0700 (root's).
    args.push("--dir", "/sys", "--dir", "/sys/fs", "--dir", "/sys/fs/cgroup");
    for (const dir of ["/sys", "/sys/fs", "/sys/fs/cgroup"]) made.add(dir);
  }
  for (const cgroup of cgroups) args.push("--ro-bind", cgroup.host, cgroup.sandbox);
  for (const mount of plan.mounts) {
    // Parents bubblewrap would make on its own come out mode 0700 (root's): the sandbox user could not enter.
    const parts = mount.sandbox.split("/").filter(Boolean);
    for (let depth = 1; depth < parts.length; depth++) {
      const parent = `/${parts.slice(0, depth).join("/")}`;
      if (!made.has(parent)) args.push("--dir", parent);
      made.add(parent);
    }
    args.push(mount.readOnly === false ? "--bind" : "--ro-bind", mount.host, mount.sandbox);
  }
  // Last: the view's own root (where /etc, /home, /var live) and /run are made read-only. Unprivileged they
  // belong to the host user, who is also the sandbox user, and are memory: writable, a sandbox could fill them.
  args.push("--remount-ro", "/run", "--remount-ro", "/");
  return args;
}
