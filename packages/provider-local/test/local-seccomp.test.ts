/**
 * The syscall filter: every call it denies fails with EPERM inside a sandbox, and reaches the kernel outside
 * (on the host, without the filter), which answers something else for the harmless arguments used here.
 * Calls that need a capability are also refused outside when this test runs unprivileged (the kernel's own
 * EPERM); for those only the inside is checked then.
 */
import { spawnSync } from "node:child_process";
import type { DriverSandbox } from "@sbox/core/spec";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalSandboxHandle, local } from "../src/index.js";
import { DENIED_SYSCALLS, seccompInstructions } from "../src/local-seccomp.js";
import { type AnyLocalProvider, call, destroyAll, tempStateRoot } from "./helpers.js";

const state = tempStateRoot("seccomp");
afterAll(() => state.cleanup());
const isRoot = process.getuid?.() === 0;

/**
 * Each probe: a syscall and harmless arguments (bad pointers, bad descriptors, invalid flags) for which the
 * kernel fails without doing anything, and whether the call needs a capability an unprivileged caller lacks.
 * x86_64 numbers; the probe is skipped on other architectures.
 */
const PROBES: { name: string; nr: number; args: number[]; privileged: boolean }[] = [
  { name: "mount", nr: 165, args: [1, 1, 1, 0, 0], privileged: true },
  { name: "umount2", nr: 166, args: [1, 0], privileged: true },
  { name: "pivot_root", nr: 155, args: [1, 1], privileged: true },
  { name: "kexec_load", nr: 246, args: [0, 0, 0, 0xffff], privileged: true },
  { name: "kexec_file_load", nr: 320, args: [-1, -1, 0, 0, 0xffff], privileged: true },
  { name: "bpf", nr: 321, args: [-1, 0, 0], privileged: false },
  { name: "perf_event_open", nr: 298, args: [1, 0, -1, -1, 0], privileged: false },
  { name: "keyctl", nr: 250, args: [-1, 0, 0], privileged: false },
  { name: "add_key", nr: 248, args: [1, 1, 0, 0, 0], privileged: false },
  { name: "request_key", nr: 249, args: [1, 1, 0, 0], privileged: false },
  { name: "open_by_handle_at", nr: 304, args: [-1, 1, 0], privileged: true },
  { name: "name_to_handle_at", nr: 303, args: [-1, 1, 1, 1, 0], privileged: false },
  { name: "init_module", nr: 175, args: [1, 0, 1], privileged: true },
  { name: "finit_module", nr: 313, args: [-1, 1, 0], privileged: true },
  { name: "delete_module", nr: 176, args: [1, 0], privileged: true },
  { name: "reboot", nr: 169, args: [0, 0, 0, 0], privileged: true },
  { name: "swapon", nr: 167, args: [1, 0], privileged: true },
  { name: "swapoff", nr: 168, args: [1], privileged: true },
  { name: "acct", nr: 163, args: [1], privileged: true },
  { name: "settimeofday", nr: 164, args: [1, 1], privileged: false },
  { name: "clock_settime", nr: 227, args: [-1, 1], privileged: false },
  { name: "setns", nr: 308, args: [-1, 0], privileged: false },
  { name: "userfaultfd", nr: 323, args: [1 | 0x80000], privileged: false },
  { name: "io_uring_setup", nr: 425, args: [0, 1], privileged: false },
  { name: "fsopen", nr: 430, args: [1, 0], privileged: true },
  { name: "open_tree", nr: 428, args: [-1, 1, 0], privileged: false },
  { name: "move_mount", nr: 429, args: [-1, 1, -1, 1, 0], privileged: true },
  { name: "process_vm_readv", nr: 310, args: [-1, 0, 0, 0, 0, 0], privileged: false },
  { name: "process_vm_writev", nr: 311, args: [-1, 0, 0, 0, 0, 0], privileged: false },
  { name: "pidfd_getfd", nr: 438, args: [-1, 0, 0], privileged: false },
  { name: "kcmp", nr: 312, args: [-1, -1, 0, 0, 0], privileged: false },
  { name: "ptrace (attach)", nr: 101, args: [16, 0x3fffffff, 0, 0], privileged: false },
  { name: "ptrace (seize)", nr: 101, args: [0x4206, 0x3fffffff, 0, 0], privileged: false },
  // Under kernel.dmesg_restrict every syslog action needs CAP_SYSLOG.
  { name: "syslog", nr: 103, args: [-1, 0, 0], privileged: true },
  { name: "ioctl TIOCSTI", nr: 16, args: [-1, 0x5412, 0], privileged: false },
  // Last: outside it succeeds, and the probing process is in a user namespace of its own from then on.
  { name: "unshare (a user namespace)", nr: 272, args: [0x10000000], privileged: false },
];

/** Runs every probe through python3 ctypes and prints `name<TAB>errno-name` per line. */
const PROBE_SCRIPT = [
  "import ctypes, errno, json, sys",
  "libc = ctypes.CDLL(None, use_errno=True)",
  "libc.syscall.restype = ctypes.c_long",
  "for probe in json.loads(sys.argv[1]):",
  "    ctypes.set_errno(0)",
  "    result = libc.syscall(probe['nr'], *[ctypes.c_long(a) for a in probe['args']])",
  "    code = ctypes.get_errno()",
  "    print(probe['name'] + '\\t' + ('OK' if result >= 0 else errno.errorcode.get(code, str(code))))",
].join("\n");

function parse(output: string): Map<string, string> {
  return new Map(
    output
      .trim()
      .split("\n")
      .map((line) => line.split("\t") as [string, string]),
  );
}

describe.runIf(process.arch === "x64")("the syscall filter (bubblewrap)", () => {
  let provider: AnyLocalProvider;
  let sandbox: DriverSandbox<LocalSandboxHandle>;

  beforeAll(async () => {
    provider = local({ root: state.home, isolation: "bwrap" });
    sandbox = await provider.doCreate({}, call());
  });
  afterAll(async () => {
    await destroyAll(provider);
  });

  it("covers every call the probes exercise, and the probes cover the filter's list", () => {
    const names = new Set(PROBES.map((probe) => probe.name.split(" ")[0]!));
    for (const name of [
      "mount",
      "umount2",
      "kexec_load",
      "bpf",
      "perf_event_open",
      "keyctl",
      "add_key",
      "open_by_handle_at",
      "init_module",
      "ptrace",
      "setns",
      "unshare",
    ]) {
      expect(names.has(name), name).toBe(true);
      if (name !== "ptrace" && name !== "unshare") expect(DENIED_SYSCALLS).toContain(name);
    }
    expect(seccompInstructions("x64")!.length).toBeLessThan(4096);
    expect(seccompInstructions("riscv64")).toBeUndefined();
  });

  it("each denied call fails with EPERM inside and reaches the kernel outside", async () => {
    const probes = JSON.stringify(PROBES);
    const inside = await provider.doExec(sandbox, {
      command: { argv: ["python3", "-c", PROBE_SCRIPT, probes] },
      signal: new AbortController().signal,
    });
    const insideResults = parse(Buffer.from(inside.stdout as Uint8Array).toString());
    const outside = spawnSync("python3", ["-c", PROBE_SCRIPT, probes], { encoding: "utf8" });
    expect(outside.status, outside.stderr).toBe(0);
    const outsideResults = parse(outside.stdout);
    for (const probe of PROBES) {
      expect(insideResults.get(probe.name), `${probe.name} inside`).toBe("EPERM");
      if (isRoot || !probe.privileged) {
        expect(outsideResults.get(probe.name), `${probe.name} outside`).not.toBe("EPERM");
      }
    }
  });

  it("clone3 is answered ENOSYS (the C library falls back to clone, whose flags the filter checks), and a child can still be traced", async () => {
    const result = await provider.doExec(sandbox, {
      command: {
        argv: [
          "python3",
          "-c",
          [
            "import ctypes, errno, os",
            "libc = ctypes.CDLL(None, use_errno=True)",
            "r = libc.syscall(435, 0, 0); print('clone3', errno.errorcode.get(ctypes.get_errno()))",
            "pid = os.fork()",
            "if pid == 0:",
            "    libc.ptrace(0, 0, 0, 0); os.kill(os.getpid(), 19); os._exit(0)",
            "os.waitpid(pid, os.WUNTRACED); libc.ptrace(7, pid, 0, 0); os.waitpid(pid, 0); print('traced child ok')",
          ].join("\n"),
        ],
      },
      signal: new AbortController().signal,
    });
    expect(Buffer.from(result.stdout as Uint8Array).toString()).toBe("clone3 ENOSYS\ntraced child ok\n");
  });
});
