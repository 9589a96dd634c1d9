/**
 * The red-team findings against provider-local (issue #12), each written as the attack it was. Every test
 * targets only files, servers and segments it creates itself, restores whatever a failing run would have
 * changed, and bounds its racing loops in time.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { DriverSandbox } from "@sbox/core/spec";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalSandboxHandle, local } from "../src/index.js";
import {
  type AnyLocalProvider,
  bundleChild,
  call,
  destroyAll,
  run,
  tempOutsideTmp,
  tempStateRoot,
  withCorePaths,
  withoutTunDevice,
} from "./helpers.js";

const state = tempStateRoot("escapes");
afterAll(() => state.cleanup());
const isRoot = process.getuid?.() === 0;
const hasGcc = spawnSync("gcc", ["--version"]).status === 0;

async function startHostServer(host: string): Promise<{ server: Server; port: number; hits: () => number }> {
  let hits = 0;
  const server = createServer((_, response) => {
    hits++;
    response.end("host answered");
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { server, port: (server.address() as AddressInfo).port, hits: () => hits };
}

/** A python3 one-off run in the sandbox; argv after the script. */
function python(
  provider: AnyLocalProvider,
  sandbox: DriverSandbox<LocalSandboxHandle>,
  script: string,
  ...args: string[]
) {
  return provider.doExec(sandbox, {
    command: { argv: ["python3", "-c", script, ...args] },
    signal: new AbortController().signal,
  });
}

const text = (bytes: Uint8Array | string) => Buffer.from(bytes as Uint8Array).toString("utf8");

describe("the red-team findings, as attacks (bubblewrap)", () => {
  let provider: AnyLocalProvider;
  let sandbox: DriverSandbox<LocalSandboxHandle>;

  beforeAll(async () => {
    provider = withCorePaths(local({ root: `${state.home}/main`, isolation: "bwrap" }));
    sandbox = await provider.doCreate({}, call());
  });
  afterAll(async () => {
    await destroyAll(provider);
  });

  it("1: host kernel settings are not writable from inside (/proc/sys, core_pattern, sysrq-trigger)", async () => {
    const read = (path: string) => readFileSync(path, "utf8");
    const before = {
      domain: read("/proc/sys/kernel/domainname"),
      core: read("/proc/sys/kernel/core_pattern"),
    };
    try {
      const result = await run(
        provider,
        sandbox,
        [
          "printf sbox-escape > /proc/sys/kernel/domainname; echo domain=$?",
          "printf '|/tmp/sbox-core %p' > /proc/sys/kernel/core_pattern; echo core=$?",
          // "h" only prints the SysRq help to the kernel log, should the write ever get through.
          "printf h > /proc/sysrq-trigger; echo sysrq=$?",
          'for f in /proc/sys/kernel/*; do [ -w "$f" ] && echo writable:$f; done; true',
        ].join("; "),
      );
      expect(result.stdout).toMatch(/domain=[1-9]/);
      expect(result.stdout).toMatch(/core=[1-9]/);
      expect(result.stdout).toMatch(/sysrq=[1-9]/);
      expect(result.stdout).not.toContain("writable:");
      expect(read("/proc/sys/kernel/domainname")).toBe(before.domain);
      expect(read("/proc/sys/kernel/core_pattern")).toBe(before.core);
    } finally {
      // A failing run must not leave the host changed.
      if (isRoot && read("/proc/sys/kernel/domainname") !== before.domain)
        writeFileSync("/proc/sys/kernel/domainname", before.domain);
      if (isRoot && read("/proc/sys/kernel/core_pattern") !== before.core)
        writeFileSync("/proc/sys/kernel/core_pattern", before.core);
    }
  });

  it("2: a sandbox process swapping a directory for a symlink to a host directory cannot make the files API touch it", async () => {
    const { dir: victim, cleanup } = tempOutsideTmp("victim");
    const ops = 120;
    try {
      // The host directory the swapped-in symlink points to, with files named like the sandbox's.
      const original = new Map<string, string>();
      for (let i = 0; i < ops; i++) {
        for (const prefix of ["f", "r", "secret"]) original.set(`${prefix}${i}`, `victim ${prefix}${i}`);
      }
      original.set("victim-only", "listed nowhere but on the host");
      for (const [name, content] of original) writeFileSync(join(victim, name), content);
      await run(
        provider,
        sandbox,
        `rm -rf race && mkdir -p race/d race/src && ln -s '${victim}' race/l && cd race && ` +
          `i=0; while [ $i -lt ${ops} ]; do echo sandbox > d/r$i; echo sandbox > d/secret$i; echo moved > src/m$i; i=$((i+1)); done`,
      );
      const snapshot = await provider.doCreateSnapshot!(sandbox, { ...call(), name: "race" });
      // renameat2(RENAME_EXCHANGE) in a loop, for a bounded time: d and l trade places all the time. Where the
      // file system has no RENAME_EXCHANGE (an unprivileged host's FUSE disk image: fuse2fs answers EINVAL),
      // three plain renames swap them instead. It counts the swaps that happened, so that a race that never
      // ran cannot pass for one that was lost.
      let swaps = "";
      const racer = await provider.doSpawn!(sandbox, {
        command: {
          argv: [
            "python3",
            "-c",
            // Absolute paths: a restore replaces the directories, and the race goes on in the new ones.
            [
              "import ctypes,os,sys,time",
              "libc=ctypes.CDLL(None,use_errno=True)",
              "end=time.time()+float(sys.argv[1])",
              "d,l,t=b'/workspace/race/d',b'/workspace/race/l',b'/workspace/race/t'",
              "n=0",
              "while time.time()<end:",
              "  if libc.renameat2(-100,d,-100,l,2)==0: n+=1; continue",
              "  try: os.rename(d,t); os.rename(l,d); os.rename(t,l); n+=1",
              "  except OSError: pass",
              "print(n, flush=True)",
            ].join("\n"),
            "8",
          ],
        },
        signal: new AbortController().signal,
        onStdout: (chunk) => {
          swaps += text(chunk);
        },
        onStderr: () => {},
      });
      const attempt = async (operation: () => Promise<unknown>) => {
        try {
          return await operation();
        } catch (error) {
          // Refusing (Validation, Conflict, NotFound...) is fine; only success may never touch the host.
          if (!(error as { code?: string }).code) throw error;
          return undefined;
        }
      };
      const leaks: string[] = [];
      for (let i = 0; i < ops; i++) {
        await attempt(() =>
          provider.doWriteFile!(sandbox, `race/d/f${i}`, new TextEncoder().encode("sandbox"), call()),
        );
        await attempt(() => provider.doRemove!(sandbox, `race/d/r${i}`, { ...call(), recursive: false }));
        await attempt(() => provider.doRename!(sandbox, `race/src/m${i}`, `race/d/m${i}`, call()));
        await attempt(() => provider.doMkdir!(sandbox, `race/d/n${i}`, { ...call(), recursive: false }));
        const read = (await attempt(() => provider.doReadFile!(sandbox, `race/d/secret${i}`, call()))) as
          | Uint8Array
          | undefined;
        if (read && text(read).startsWith("victim")) leaks.push(`read secret${i}`);
        const listed = (await attempt(() => provider.doListFiles!(sandbox, "race/d", call()))) as
          | { name: string }[]
          | undefined;
        if (listed?.some((entry) => entry.name === "victim-only"))
          leaks.push(`listed the host directory (${i})`);
        const stat = (await attempt(() =>
          provider.doStat!(sandbox, "race/d/victim-only", call()),
        )) as unknown;
        if (stat) leaks.push(`stat reached the host directory (${i})`);
        if (i % 30 === 0) await attempt(() => provider.doRestoreSnapshot!(sandbox, snapshot, call()));
      }
      // The race runs its full time (bounded: 8 s) so that it reports its swaps.
      await racer.wait();
      expect(Number(swaps.trim()), "swaps the racing process made").toBeGreaterThan(0);
      const now = readdirSync(victim).sort();
      expect(now).toEqual([...original.keys()].sort());
      for (const [name, content] of original) expect(readFileSync(join(victim, name), "utf8")).toBe(content);
      expect(leaks).toEqual([]);
    } finally {
      cleanup();
    }
  });

  it("3: the command's environment never reaches the launchers: an LD_PRELOAD library is not loaded on the host", async () => {
    const { dir, cleanup } = tempOutsideTmp("preload");
    try {
      const marker = join(dir, "loaded");
      // LD_DEBUG works without a compiler: the dynamic loader of any host program that got it would report
      // itself; inside the sandbox only the command's own programs may.
      const debug = await provider.doExec(sandbox, {
        command: { shell: "true" },
        env: { LD_DEBUG: "files" },
        signal: new AbortController().signal,
      });
      const report = text(debug.stderr);
      expect(report).not.toMatch(/bwrap|nsenter/);
      if (hasGcc) {
        const source = join(dir, "evil.c");
        writeFileSync(
          source,
          `#include <stdio.h>\n#include <unistd.h>\n__attribute__((constructor)) static void evil(void) { FILE *f = fopen("${marker}", "a"); if (f) { fprintf(f, "%d\\n", (int)getpid()); fclose(f); } }\n`,
        );
        execFileSync("gcc", ["-shared", "-fPIC", "-o", join(dir, "evil.so"), source]);
        await provider.doWriteFile!(sandbox, "evil.so", readFileSync(join(dir, "evil.so")), call());
        // Both spellings: relative (the launcher's cwd used to be the workspace) and the workspace's host path.
        for (const preload of ["./evil.so", `${sandbox.native.workspace}/evil.so`]) {
          await provider.doExec(sandbox, {
            command: { shell: "true" },
            env: { LD_PRELOAD: preload },
            signal: new AbortController().signal,
          });
        }
        expect(existsSync(marker)).toBe(false);
      }
      // Nor does it show on a host program's command line, where any user of the host could read it.
      const secret = `sbox-secret-${Date.now()}`;
      const proc = await provider.doSpawn!(sandbox, {
        command: { shell: "sleep 5" },
        env: { TOKEN: secret },
        signal: new AbortController().signal,
        onStdout: () => {},
        onStderr: () => {},
      });
      try {
        const shown = readdirSync("/proc")
          .filter((name) => /^\d+$/.test(name))
          .filter((name) => {
            try {
              return readFileSync(`/proc/${name}/cmdline`, "utf8").includes(secret);
            } catch {
              return false;
            }
          });
        expect(shown).toEqual([]);
      } finally {
        await proc.kill();
        await proc.wait();
      }
    } finally {
      cleanup();
    }
  });

  it("4: with egress blocked, no process a command can see is one it may ptrace, and none is outside its network", async () => {
    const { server, port, hits } = await startHostServer("127.0.0.1");
    const blocked = await provider.doCreate({ network: { egress: "block-all" } }, call());
    try {
      // Give the sandbox something to attack besides the holder: a background process of its own.
      await provider.doSpawn!(blocked, {
        command: { shell: "sleep 30" },
        signal: new AbortController().signal,
        onStdout: () => {},
        onStderr: () => {},
      });
      const result = await python(
        provider,
        blocked,
        [
          "import ctypes, os",
          "libc = ctypes.CDLL(None, use_errno=True)",
          "libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]",
          "me = os.getpid(); mine = os.readlink('/proc/self/ns/net')",
          "for name in sorted(os.listdir('/proc')):",
          "    if not name.isdigit() or int(name) == me: continue",
          "    pid = int(name)",
          "    for request, label in ((16, 'attach'), (0x4206, 'seize')):",
          "        if libc.ptrace(request, pid, None, None) == 0:",
          "            print(label, pid, 'ATTACHED'); libc.ptrace(17, pid, None, None)",
          "    try:",
          "        open(f'/proc/{pid}/mem', 'r+b').close(); writable = True",
          "    except OSError:",
          "        writable = False",
          "    try:",
          "        net = os.readlink(f'/proc/{pid}/ns/net')",
          "    except OSError:",
          "        net = None",
          "    if writable and net != mine: print('injectable outside the sandbox network', pid)",
          "import urllib.request",
          `try: urllib.request.urlopen('http://127.0.0.1:${port}', timeout=2); print('REACHED HOST')`,
          "except Exception: pass",
        ].join("\n"),
      );
      expect(text(result.stdout)).not.toMatch(/ATTACHED|injectable|REACHED/);
      expect(hits()).toBe(0);
    } finally {
      await provider.doDestroy(blocked, call());
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("6: SysV IPC is the sandbox's own: a host segment is invisible and cannot be removed", async () => {
    const made = spawnSync("ipcmk", ["-M", "4096"], { encoding: "utf8" });
    const id = /(\d+)\s*$/.exec(made.stdout.trim())?.[1];
    expect(id, made.stderr).toBeDefined();
    try {
      const result = await run(provider, sandbox, `ipcs -m | grep -c ' ${id} ' ; ipcrm -m ${id}; echo rm=$?`);
      expect(result.stdout).toMatch(/^0\n/);
      expect(result.stdout).toMatch(/rm=[1-9]/);
      expect(spawnSync("ipcs", ["-m", "-i", id!]).status).toBe(0);
    } finally {
      spawnSync("ipcrm", ["-m", id!]);
    }
  });

  it("6: a sandbox under another state root cannot read this root's sandboxes", async () => {
    const { dir, cleanup } = tempOutsideTmp("second-root");
    const other = local({ root: dir, isolation: "bwrap" });
    try {
      const target = await other.doCreate({}, call());
      await run(other, target, "echo other-secret > s");
      const result = await run(
        provider,
        sandbox,
        `cat '${target.native.workspace}/s' 2>/dev/null; ls '${dir}' '${state.home}' 2>/dev/null | wc -l`,
      );
      expect(result.stdout).toBe("0\n");
      await destroyAll(other);
    } finally {
      cleanup();
    }
  });

  it("7: the host view is denied by default: no /root, no home directories, no checkout, no shadow, no host process", async () => {
    const planted = isRoot
      ? `/root/.sbox-escape-test-${process.pid}`
      : join(process.env.HOME ?? "/nonexistent", `.sbox-escape-test-${process.pid}`);
    writeFileSync(planted, "planted secret");
    const checkout = new URL(import.meta.url).pathname;
    try {
      const result = await run(
        provider,
        sandbox,
        [
          `cat '${planted}' 2>/dev/null`,
          `cat '${checkout}' 2>/dev/null | head -c 100`,
          "cat /etc/shadow 2>/dev/null",
          "ls /home",
          "ls /root 2>/dev/null",
          `kill -0 ${process.pid} 2>/dev/null && echo host-process-visible`,
          `ls /proc/${process.pid} >/dev/null 2>&1 && echo host-proc-visible`,
          "for p in /etc/x /usr/x /opt/x /x /var/x /run/x /proc/x; do touch $p 2>/dev/null && echo wrote:$p; done",
          "true",
        ].join("; "),
      );
      expect(result.stdout).toBe("user\n");
    } finally {
      const { rmSync } = await import("node:fs");
      rmSync(planted, { force: true });
    }
  });

  it("7: no daemon socket under /run is reachable", async () => {
    const path = isRoot ? `/run/sbox-escape-test-${process.pid}.sock` : undefined;
    const { createServer: createSocketServer } = await import("node:net");
    const server = path ? createSocketServer((socket) => socket.end("daemon answered")) : undefined;
    if (server && path) await new Promise<void>((resolve) => server.listen(path, resolve));
    try {
      const result = await run(provider, sandbox, "find /run -type s 2>/dev/null; ls -A /run");
      expect(result.stdout).toBe("");
      if (path) {
        const probe = await python(
          provider,
          sandbox,
          "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n  s.connect(sys.argv[1]); print(s.recv(64).decode())\nexcept OSError as e: print('refused', e.strerror)",
          path,
        );
        expect(text(probe.stdout)).not.toContain("daemon answered");
      }
    } finally {
      if (server) await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("the host's network is unreachable (bubblewrap, user-mode network)", () => {
  let provider: AnyLocalProvider;
  let sandbox: DriverSandbox<LocalSandboxHandle>;
  let mode = "";
  const servers: { server: Server; port: number; hits: () => number }[] = [];

  beforeAll(async () => {
    provider = local({ root: `${state.home}/net`, isolation: "bwrap" });
    sandbox = await provider.doCreate({}, call());
    mode = ((await provider.doGetInfo(sandbox, call())).raw as { network: { mode: string } }).network.mode;
    servers.push(await startHostServer("127.0.0.1"), await startHostServer("0.0.0.0"));
  });
  afterAll(async () => {
    await destroyAll(provider);
    for (const { server } of servers) await new Promise((resolve) => server.close(resolve));
  });

  /** Every address of this host, loopback included, and the sandbox's gateway. */
  const addresses = async () => {
    const { networkInterfaces } = await import("node:os");
    const found = ["127.0.0.1", "10.0.2.2"];
    for (const list of Object.values(networkInterfaces()))
      for (const address of list ?? []) if (address.family === "IPv4") found.push(address.address);
    return [...new Set(found)];
  };

  const probeAll = async (target: DriverSandbox<LocalSandboxHandle>) => {
    const script = [
      "import socket, sys",
      "for target in sys.argv[1:]:",
      "    host, port = target.rsplit(':', 1)",
      "    s = socket.socket(); s.settimeout(2)",
      "    try:",
      "        s.connect((host, int(port))); s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n'); print('REACHED', target, s.recv(64))",
      "    except OSError: pass",
    ].join("\n");
    const targets: string[] = [];
    for (const address of await addresses())
      for (const { port } of servers) targets.push(`${address}:${port}`);
    return text((await python(provider, target, script, ...targets)).stdout);
  };

  it("with the default egress, neither the host's loopback nor its own addresses answer", async () => {
    // The sandbox's own stack where one is usable, else no network at all: never the host's (fails closed).
    expect(["user-mode", "none"]).toContain(mode);
    expect(await probeAll(sandbox)).toBe("");
    expect(servers.every(({ hits }) => hits() === 0)).toBe(true);
  });

  it("with egress blocked, nothing of the host answers either", async () => {
    const blocked = await provider.doCreate({ network: { egress: "block-all" } }, call());
    try {
      expect(await probeAll(blocked)).toBe("");
      expect(servers.every(({ hits }) => hits() === 0)).toBe(true);
    } finally {
      await provider.doDestroy(blocked, call());
    }
  });
});

describe("the network fails closed where no user-mode stack is usable", () => {
  // The child runs where /dev/net/tun does not exist (its own mount namespace), as this same user.
  const noTun = withoutTunDevice();
  it.skipIf("skip" in noTun)(
    `default: no network; explicit allow-all: NotSupported saying how to enable it; hostNetwork: the host's, by choice${"skip" in noTun ? ` (skipped: ${noTun.skip})` : ""}`,
    async () => {
      const child = await bundleChild(state.home, "local-no-network", {
        wrapper: "wrapper" in noTun ? noTun.wrapper : [],
      });
      const result = (await child(join(state.home, "no-tun"))) as Record<string, Record<string, unknown>>;
      expect(result.error, JSON.stringify(result)).toBeUndefined();
      const { byDefault, explicitCreate, explicitSet, optionDefault, withPorts, optedIn, legacy } =
        result as Record<string, Record<string, unknown> & { code?: string; message?: string }>;
      // The limit of the test is in force: the child really had no stack (else it would prove nothing).
      const raw = byDefault!.raw as { egress: string; network: { mode: string; reason: string } };
      expect(raw.network.reason).toContain("/dev/net/tun");
      expect(raw.egress).toBe("block-all");
      expect(raw.network.mode).toBe("none");
      expect(byDefault!.interfaces).toBe("lo");
      expect(byDefault!.fetched).not.toContain("host answered");
      expect(result.warnings).toContain("SBOX_LOCAL_NO_NETWORK");
      for (const refused of [explicitCreate!, explicitSet!, optionDefault!, withPorts!, legacy!]) {
        expect(refused.code, JSON.stringify(refused)).toBe("NotSupported");
        expect(refused.message).toContain("/dev/net/tun");
        expect(refused.message).toContain("hostNetwork: true");
      }
      // Opted in: allow-all by default, the host's network (its loopback server answers), and setEgress works.
      expect(optedIn).toMatchObject({
        egress: "allow-all",
        mode: "host",
        fetched: "host answered",
        explicitSet: {},
      });
      expect(result.hits).toBe(1);
    },
  );

  it("hostNetwork is a boolean", () => {
    expect(() => local({ network: { hostNetwork: "yes" as unknown as boolean } })).toThrow(
      /network.hostNetwork must be true or false/,
    );
  });
});

describe("mounts give the sandbox exactly what was listed", () => {
  it("validates mounts: absolute, no overlap with the sandbox's own or system directories, host path existing", async () => {
    const codeOf = (make: () => unknown) => {
      try {
        make();
        return undefined;
      } catch (error) {
        return (error as { code?: string }).code;
      }
    };
    for (const mounts of [
      [{ host: "relative", sandbox: "/data" }],
      [{ host: "/usr", sandbox: "data" }],
      [{ host: "/usr", sandbox: "/workspace/x" }],
      [{ host: "/usr", sandbox: "/home" }],
      [{ host: "/usr", sandbox: "/" }],
      [{ host: "/usr", sandbox: "/etc/x" }],
      [
        { host: "/usr", sandbox: "/data" },
        { host: "/usr", sandbox: "/data/x" },
      ],
    ]) {
      expect(
        codeOf(() => local({ isolation: "bwrap", mounts })),
        JSON.stringify(mounts),
      ).toBe("Validation");
    }
    const missing = local({
      root: `${state.home}/mounts`,
      isolation: "bwrap",
      mounts: [{ host: "/nonexistent-sbox", sandbox: "/data" }],
    });
    await expect(missing.doCreate({}, call())).rejects.toMatchObject({ code: "Validation" });
    const stateRoot = local({
      root: `${state.home}/mounts`,
      isolation: "bwrap",
      mounts: [{ host: state.home, sandbox: "/data" }],
    });
    await expect(stateRoot.doCreate({}, call())).rejects.toMatchObject({ code: "Validation" });
  });

  it("a read-only mount is readable and not writable; a writable one is writable", async () => {
    const { dir, cleanup } = tempOutsideTmp("mounts");
    try {
      mkdirSync(join(dir, "ro"));
      mkdirSync(join(dir, "rw"));
      writeFileSync(join(dir, "ro", "given"), "given to the sandbox");
      if (isRoot) {
        // The sandbox user is an unprivileged host id: let it write the writable mount.
        const { chownSync } = await import("node:fs");
        const provider0 = local({ root: `${state.home}/mounts`, isolation: "bwrap" });
        const probe = await provider0.doCreate({}, call());
        const hostUid = ((await provider0.doGetInfo(probe, call())).raw as { user: { hostUid: number } }).user
          .hostUid;
        chownSync(join(dir, "rw"), hostUid, hostUid);
        await destroyAll(provider0);
      }
      const provider = local({
        root: `${state.home}/mounts`,
        isolation: "bwrap",
        mounts: [
          { host: join(dir, "ro"), sandbox: "/data/ro" },
          { host: join(dir, "rw"), sandbox: "/data/rw", readOnly: false },
        ],
      });
      const sandbox = await provider.doCreate({}, call());
      const result = await run(
        provider,
        sandbox,
        "cat /data/ro/given; echo; touch /data/ro/x 2>/dev/null && echo ro-writable; echo made > /data/rw/made && echo rw-ok",
      );
      expect(result.stdout).toBe("given to the sandbox\nrw-ok\n");
      expect(readFileSync(join(dir, "rw", "made"), "utf8")).toBe("made\n");
      await destroyAll(provider);
    } finally {
      cleanup();
    }
  });
});
