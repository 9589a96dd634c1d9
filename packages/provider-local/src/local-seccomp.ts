/**
 * The syscall filter every sandboxed process runs under, modelled on Docker's default seccomp profile: the
 * calls that reach the kernel's privileged or cross-process interfaces fail with EPERM. It is a classic BPF
 * program assembled here (no libseccomp, no native addon) and handed to bubblewrap with `--seccomp FD`,
 * which loads it right before it executes the command.
 */

/** `struct sock_filter` opcodes used here (linux/filter.h). */
const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_JSET_K = 0x45;
const BPF_RET_K = 0x06;

/** Return values (linux/seccomp.h). */
const RET_KILL_PROCESS = 0x80000000;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;

/** Offsets in `struct seccomp_data`: the syscall number, the audit arch, then six 64-bit arguments. */
const DATA_NR = 0;
const DATA_ARCH = 4;
/** The low 32 bits of argument `index` (little-endian hosts only). */
const argLow = (index: number) => 16 + 8 * index;

/** One `struct sock_filter`. */
interface Instruction {
  readonly code: number;
  readonly jt: number;
  readonly jf: number;
  readonly k: number;
}

const load = (offset: number): Instruction => ({ code: BPF_LD_W_ABS, jt: 0, jf: 0, k: offset });
const jumpIfEqual = (k: number, jt: number, jf: number): Instruction => ({ code: BPF_JEQ_K, jt, jf, k });
const jumpIfAtLeast = (k: number, jt: number, jf: number): Instruction => ({ code: BPF_JGE_K, jt, jf, k });
const jumpIfAnyBit = (k: number, jt: number, jf: number): Instruction => ({ code: BPF_JSET_K, jt, jf, k });
const ret = (k: number): Instruction => ({ code: BPF_RET_K, jt: 0, jf: 0, k });
const deny = (errno: number) => ret(RET_ERRNO | errno);

/** The syscall numbers the filter needs, per architecture. */
interface SyscallTable {
  /** `AUDIT_ARCH_*`: a call made through another ABI (32-bit `int 0x80`) is refused outright. */
  readonly auditArch: number;
  /** Numbers at or above this belong to another ABI sharing the architecture (x32). */
  readonly foreignAbiBase?: number | undefined;
  readonly numbers: Readonly<Record<string, number | undefined>>;
}

// From asm/unistd_64.h (x86_64) and asm-generic/unistd.h (aarch64); numbers from 403 on are shared.
const X86_64: SyscallTable = {
  auditArch: 0xc000003e,
  foreignAbiBase: 0x40000000,
  numbers: {
    acct: 163,
    add_key: 248,
    bpf: 321,
    clock_adjtime: 305,
    clock_settime: 227,
    clone: 56,
    create_module: 174,
    delete_module: 176,
    finit_module: 313,
    get_kernel_syms: 177,
    init_module: 175,
    ioctl: 16,
    ioperm: 173,
    iopl: 172,
    kcmp: 312,
    kexec_file_load: 320,
    kexec_load: 246,
    keyctl: 250,
    lookup_dcookie: 212,
    migrate_pages: 256,
    mount: 165,
    move_pages: 279,
    name_to_handle_at: 303,
    nfsservctl: 180,
    open_by_handle_at: 304,
    perf_event_open: 298,
    pivot_root: 155,
    process_vm_readv: 310,
    process_vm_writev: 311,
    ptrace: 101,
    query_module: 178,
    quotactl: 179,
    reboot: 169,
    request_key: 249,
    setdomainname: 171,
    sethostname: 170,
    setns: 308,
    settimeofday: 164,
    swapoff: 168,
    swapon: 167,
    syslog: 103,
    sysfs: 139,
    _sysctl: 156,
    umount2: 166,
    unshare: 272,
    uselib: 134,
    userfaultfd: 323,
    ustat: 136,
    vhangup: 153,
  },
};

const AARCH64: SyscallTable = {
  auditArch: 0xc00000b7,
  numbers: {
    acct: 89,
    add_key: 217,
    bpf: 280,
    clock_adjtime: 266,
    clock_settime: 112,
    clone: 220,
    delete_module: 106,
    finit_module: 273,
    init_module: 105,
    ioctl: 29,
    kcmp: 272,
    kexec_file_load: 294,
    kexec_load: 104,
    keyctl: 219,
    lookup_dcookie: 18,
    migrate_pages: 238,
    mount: 40,
    move_pages: 239,
    name_to_handle_at: 264,
    nfsservctl: 42,
    open_by_handle_at: 265,
    perf_event_open: 241,
    pivot_root: 41,
    process_vm_readv: 270,
    process_vm_writev: 271,
    ptrace: 117,
    quotactl: 60,
    reboot: 142,
    request_key: 218,
    setdomainname: 162,
    sethostname: 161,
    setns: 268,
    settimeofday: 170,
    swapoff: 225,
    swapon: 224,
    syslog: 116,
    umount2: 39,
    unshare: 97,
    userfaultfd: 282,
    vhangup: 58,
  },
};

/** Calls numbered alike on every architecture (the unified table from Linux 5.1 on). */
const SHARED_NUMBERS: Readonly<Record<string, number>> = {
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  clone3: 435,
  pidfd_getfd: 438,
  process_madvise: 440,
  mount_setattr: 442,
  quotactl_fd: 443,
  open_tree_attr: 467,
};

/**
 * Refused with EPERM whatever their arguments: mounting and the new mount API, module and kexec loading,
 * BPF, perf, the kernel keyring, handle-based opens (a way around the mount view), clock and host settings,
 * swap, raw port I/O, io_uring (its own syscall surface, unfiltered), and every call that reads or changes
 * another process's memory or descriptors (process_vm_*, pidfd_getfd, process_madvise, move_pages, kcmp).
 */
export const DENIED_SYSCALLS: readonly string[] = [
  "acct",
  "add_key",
  "bpf",
  "clock_adjtime",
  "clock_settime",
  "create_module",
  "delete_module",
  "finit_module",
  "fsconfig",
  "fsmount",
  "fsopen",
  "fspick",
  "get_kernel_syms",
  "init_module",
  "io_uring_enter",
  "io_uring_register",
  "io_uring_setup",
  "ioperm",
  "iopl",
  "kcmp",
  "kexec_file_load",
  "kexec_load",
  "keyctl",
  "lookup_dcookie",
  "migrate_pages",
  "mount",
  "mount_setattr",
  "move_mount",
  "move_pages",
  "name_to_handle_at",
  "nfsservctl",
  "open_by_handle_at",
  "open_tree",
  "open_tree_attr",
  "perf_event_open",
  "pidfd_getfd",
  "pivot_root",
  "process_madvise",
  "process_vm_readv",
  "process_vm_writev",
  "query_module",
  "quotactl",
  "quotactl_fd",
  "reboot",
  "request_key",
  "setdomainname",
  "sethostname",
  "setns",
  "settimeofday",
  "swapoff",
  "swapon",
  "syslog",
  "sysfs",
  "_sysctl",
  "umount2",
  "uselib",
  "userfaultfd",
  "ustat",
  "vhangup",
];

/** `ptrace` requests that take hold of a process that did not ask for it (PTRACE_TRACEME stays allowed). */
const PTRACE_ATTACH = 16;
const PTRACE_SEIZE = 0x4206;
/** Every `CLONE_NEW*` flag: no new namespace may be made inside a sandbox (clone, unshare). */
const CLONE_NEW_NAMESPACES = 0x7e020080;
/** Terminal input injection and the VT console ioctl. */
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;

function tableFor(arch: string): SyscallTable | undefined {
  if (arch === "x64") return X86_64;
  if (arch === "arm64") return AARCH64;
  return undefined;
}

function numberOf(table: SyscallTable, name: string): number | undefined {
  return table.numbers[name] ?? SHARED_NUMBERS[name];
}

/**
 * A block run when the syscall number is `nr`: loads argument `argument` and denies when `denies` says so
 * for it, else allows. Every path of the block returns, so a non-matching call skips it whole.
 */
function argumentBlock(nr: number, argument: number, checks: readonly Instruction[]): Instruction[] {
  const body = [load(argLow(argument)), ...checks];
  return [jumpIfEqual(nr, 0, body.length), ...body];
}

/** The filter as instructions, or `undefined` for an architecture this provider has no table for. */
export function seccompInstructions(arch: string = process.arch): Instruction[] | undefined {
  const table = tableFor(arch);
  if (!table) return undefined;
  const program: Instruction[] = [
    load(DATA_ARCH),
    jumpIfEqual(table.auditArch, 1, 0),
    ret(RET_KILL_PROCESS),
    load(DATA_NR),
  ];
  if (table.foreignAbiBase !== undefined)
    program.push(jumpIfAtLeast(table.foreignAbiBase, 0, 1), deny(ENOSYS));
  for (const name of DENIED_SYSCALLS) {
    const nr = numberOf(table, name);
    if (nr === undefined) continue; // the architecture never had it
    program.push(jumpIfEqual(nr, 0, 1), deny(EPERM));
  }
  // clone3 passes its flags in memory a filter cannot read: ENOSYS makes the C library fall back to clone.
  program.push(jumpIfEqual(numberOf(table, "clone3")!, 0, 1), deny(ENOSYS));
  program.push(
    ...argumentBlock(numberOf(table, "ptrace")!, 0, [
      jumpIfEqual(PTRACE_ATTACH, 2, 0),
      jumpIfEqual(PTRACE_SEIZE, 1, 0),
      ret(RET_ALLOW),
      deny(EPERM),
    ]),
  );
  for (const name of ["clone", "unshare"]) {
    program.push(
      ...argumentBlock(numberOf(table, name)!, 0, [
        jumpIfAnyBit(CLONE_NEW_NAMESPACES, 1, 0),
        ret(RET_ALLOW),
        deny(EPERM),
      ]),
    );
  }
  program.push(
    ...argumentBlock(numberOf(table, "ioctl")!, 1, [
      jumpIfEqual(TIOCSTI, 2, 0),
      jumpIfEqual(TIOCLINUX, 1, 0),
      ret(RET_ALLOW),
      deny(EPERM),
    ]),
  );
  program.push(ret(RET_ALLOW));
  return program;
}

let cached: { arch: string; bytes: Buffer | undefined } | undefined;

/**
 * The filter in the binary form bubblewrap reads from `--seccomp FD` (an array of `struct sock_filter` in
 * host byte order), or `undefined` when this architecture has no table (the sandbox then runs without one,
 * and says so).
 */
export function seccompProgram(arch: string = process.arch): Buffer | undefined {
  if (cached?.arch === arch) return cached.bytes;
  const instructions = seccompInstructions(arch);
  let bytes: Buffer | undefined;
  if (instructions) {
    bytes = Buffer.alloc(instructions.length * 8);
    instructions.forEach((instruction, index) => {
      bytes!.writeUInt16LE(instruction.code, index * 8);
      bytes!.writeUInt8(instruction.jt, index * 8 + 2);
      bytes!.writeUInt8(instruction.jf, index * 8 + 3);
      bytes!.writeUInt32LE(instruction.k >>> 0, index * 8 + 4);
    });
  }
  cached = { arch, bytes };
  return bytes;
}
