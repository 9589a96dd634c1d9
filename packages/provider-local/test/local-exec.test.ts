import { existsSync, readFileSync } from "node:fs";
import type { DriverSandbox } from "@sbox/core/spec";
import { SandboxError } from "@sbox/core/spec";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalSandboxHandle } from "../src/index.js";
import {
  type AnyLocalProvider,
  call,
  destroyAll,
  eventually,
  MODES,
  processesWithMarker,
  providerFor,
  run,
  sh,
  tempOutsideTmp,
  tempStateRoot,
} from "./helpers.js";

const state = tempStateRoot("exec");
afterAll(() => state.cleanup());

const HOSTILE_WORDS = [
  "it's",
  'say "hi"',
  "$(touch /tmp/pwned)",
  "`touch /tmp/pwned`",
  "a\nb",
  "tab\there",
  "semi;colon && echo no",
  "*",
  "ünïcødé 🚀",
  "-n",
  "",
  "back\\slash",
];

describe.each(MODES)("foreground commands (%s)", (mode) => {
  let provider: AnyLocalProvider;
  let sandbox: DriverSandbox<LocalSandboxHandle>;

  beforeAll(async () => {
    provider = providerFor(mode, state.home);
    sandbox = await provider.doCreate({ env: { FROM_SPEC: "spec value" } }, call());
  });
  afterAll(async () => {
    await destroyAll(provider);
  });

  it("separates stdout from stderr and reports exit codes 0..255 as data", async () => {
    const result = await run(provider, sandbox, "echo out; echo err >&2; exit 7");
    expect(result).toMatchObject({ stdout: "out\n", stderr: "err\n", exitCode: 7 });
    for (const code of [0, 1, 126, 255]) {
      expect((await run(provider, sandbox, `exit ${code}`)).exitCode).toBe(code);
    }
  });

  it("starts in /workspace with HOME (the sandbox user's) and TMPDIR inside the sandbox, and passes no host variable", async () => {
    process.env.SBOX_TEST_HOST_SECRET = "must-not-leak";
    try {
      const result = await run(
        provider,
        sandbox,
        'echo "$HOME|$TMPDIR|$SBOX_TEST_HOST_SECRET|$FROM_SPEC"; pwd',
      );
      const [vars, cwd] = result.stdout.trim().split("\n");
      const { workspace, tmp, home } = sandbox.native;
      if (mode === "bwrap") {
        expect(vars).toBe("/home/user|/tmp||spec value");
        expect(cwd).toBe("/workspace");
      } else {
        expect(vars).toBe(`${home}|${tmp}||spec value`);
        expect(cwd).toBe(workspace);
      }
    } finally {
      delete process.env.SBOX_TEST_HOST_SECRET;
    }
  });

  it("runs argv without a shell: hostile words arrive byte for byte", async () => {
    const result = await provider.doExec(sandbox, {
      command: { argv: ["printf", "%s\\0", ...HOSTILE_WORDS] },
      signal: new AbortController().signal,
    });
    expect(result.exitCode).toBe(0);
    const words = Buffer.from(result.stdout as Uint8Array)
      .toString("utf8")
      .split("\0")
      .slice(0, -1);
    expect(words).toEqual(HOSTILE_WORDS);
    expect((await run(provider, sandbox, "test -e /tmp/pwned && echo yes || echo no")).stdout).toBe("no\n");
  });

  it("reports a missing program as exit 127 with a message, in argv form too", async () => {
    const result = await provider.doExec(sandbox, {
      command: { argv: ["definitely-not-a-program-xyz"] },
      signal: new AbortController().signal,
    });
    expect(result.exitCode).toBe(127);
    expect(Buffer.from(result.stderr as Uint8Array).toString()).toContain("definitely-not-a-program-xyz");
  });

  it("honours per-command cwd and env with hostile values", async () => {
    await run(provider, sandbox, "mkdir -p 'sub dir/x'");
    const value = "it's $(not run) `nor this` \n second line";
    const result = await run(provider, sandbox, 'pwd; printf "%s" "$VALUE"', {
      cwd: "sub dir/x",
      env: { VALUE: value, FROM_SPEC: "overridden" },
    });
    const [cwd, ...rest] = result.stdout.split("\n");
    expect(cwd?.endsWith("/sub dir/x")).toBe(true);
    expect(rest.join("\n")).toBe(value);
    const absolute = await run(provider, sandbox, "pwd", { cwd: "/workspace/sub dir" });
    expect(absolute.stdout.trim().endsWith("/sub dir")).toBe(true);
    const inTmp = await run(provider, sandbox, "pwd", { cwd: "/tmp" });
    expect(inTmp.stdout.trim()).toBe(mode === "bwrap" ? "/tmp" : sandbox.native.tmp);
  });

  it("fails a command whose cwd does not exist instead of running it elsewhere", async () => {
    const result = await run(provider, sandbox, "echo ran", { cwd: "no/such/dir" });
    expect(result.exitCode).not.toBe(0);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("no/such/dir");
  });

  it("feeds stdin from bytes and from a stream, and closes it", async () => {
    const bytes = new Uint8Array(256).map((_, i) => i);
    const fromBytes = await provider.doExec(
      sandbox,
      sh("od -An -tx1 | tr -d ' \\n' | wc -c", { stdin: bytes }),
    );
    expect(
      Buffer.from(fromBytes.stdout as Uint8Array)
        .toString()
        .trim(),
    ).toBe("512");
    const chunks = ["first ", "second ", "third"];
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = chunks.shift();
        if (next === undefined) controller.close();
        else {
          await new Promise((resolve) => setTimeout(resolve, 20));
          controller.enqueue(new TextEncoder().encode(next));
        }
      },
    });
    const fromStream = await run(provider, sandbox, "cat", { stdin: stream });
    expect(fromStream.stdout).toBe("first second third");
    // No stdin at all is an immediate EOF, not a hang.
    expect((await run(provider, sandbox, "cat; echo done")).stdout).toBe("done\n");
  });

  it("streams output as it is produced: the first chunk arrives long before the end", async () => {
    const events: { at: number; text: string }[] = [];
    const started = Date.now();
    const exit = await provider.doExecStream!(sandbox, {
      ...sh("echo first; sleep 1; echo second"),
      onStdout: (chunk) =>
        events.push({ at: Date.now() - started, text: Buffer.from(chunk as Uint8Array).toString() }),
      onStderr: () => {},
    });
    const ended = Date.now() - started;
    expect(exit.exitCode).toBe(0);
    expect(events.map((e) => e.text).join("")).toBe("first\nsecond\n");
    expect(events[0]!.text).toBe("first\n");
    expect(ended - events[0]!.at).toBeGreaterThan(700);
  });

  it("reports a signal death with the signal's name and 128+n", async () => {
    const result = await run(provider, sandbox, "kill -TERM $$");
    expect(result.exitCode).toBe(143);
    if (mode === "none") expect(result.signal).toBe("SIGTERM");
  });

  it("an aborted run kills the whole tree and rejects with Aborted", async () => {
    const marker = `${31000 + Math.floor(Math.random() * 999)}.5`;
    const controller = new AbortController();
    const pending = provider.doExec(sandbox, {
      command: { shell: `sleep ${marker} & (sleep ${marker} &) ; setsid sleep ${marker} & sleep ${marker}` },
      signal: controller.signal,
    });
    expect(await eventually(async () => (await processesWithMarker(`sleep\0${marker}`)).length === 4)).toBe(
      true,
    );
    controller.abort();
    const error = await pending.catch((e: unknown) => e);
    expect(SandboxError.isInstance(error) && error.code).toBe("Aborted");
    expect(await processesWithMarker(`sleep\0${marker}`)).toEqual([]);
  });

  it("kills leftovers of a finished command so run() returns at once", async () => {
    const marker = `${32000 + Math.floor(Math.random() * 999)}.5`;
    const started = Date.now();
    const result = await run(provider, sandbox, `sleep ${marker} & echo started`);
    expect(result.stdout).toBe("started\n");
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await eventually(async () => (await processesWithMarker(`sleep\0${marker}`)).length === 0)).toBe(
      true,
    );
  });

  it.runIf(mode === "none" || process.getuid?.() === 0)(
    "spares a child that lets go of the output soon after its command ended, even while the host program is busy",
    async () => {
      const marker = `${33000 + Math.floor(Math.random() * 999)}.5`;
      // The child keeps the output pipes a few milliseconds after its command ended, then detaches. Every
      // turn of the event loop is blocked for 60 ms, so the command's exit and the end of its pipes are seen
      // in different turns, with the leftover check due in between: it must look at the pipes again before
      // taking the child for a leftover that holds them.
      let blocking = true;
      const block = () => {
        const until = Date.now() + 60;
        while (Date.now() < until);
        if (blocking) setImmediate(block);
      };
      setImmediate(block);
      try {
        const results = await Promise.all(
          Array.from({ length: 10 }, () =>
            run(
              provider,
              sandbox,
              `{ sleep 0.012; exec setsid sleep ${marker} </dev/null >/dev/null 2>&1; } & echo started`,
            ),
          ),
        );
        for (const result of results) expect(result.stdout).toBe("started\n");
      } finally {
        blocking = false;
      }
      const alive = await processesWithMarker(`sleep\0${marker}`);
      for (const pid of alive) process.kill(pid, "SIGKILL");
      expect(alive.length).toBe(10);
    },
  );

  it("runs 20 commands in parallel on one sandbox", async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        run(provider, sandbox, `echo ${i}; echo e${i} >&2; exit ${i % 5}`),
      ),
    );
    results.forEach((result, i) => {
      expect(result).toMatchObject({ stdout: `${i}\n`, stderr: `e${i}\n`, exitCode: i % 5 });
    });
  });

  it("streams 100 MB of output with bounded memory", async () => {
    const global = globalThis as { gc?: () => void };
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    let bytes = 0;
    let chunks = 0;
    try {
      const exit = await provider.doExecStream!(sandbox, {
        ...sh("head -c 100000000 /dev/zero"),
        onStdout: (chunk) => {
          bytes += (chunk as Uint8Array).byteLength;
          chunks++;
        },
        onStderr: () => {},
      });
      expect(exit.exitCode).toBe(0);
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, process.memoryUsage().rss);
    expect(bytes).toBe(100_000_000);
    expect(chunks).toBeGreaterThan(100);
    expect(peak - before).toBeLessThan(50 * 1024 * 1024);
  });

  it("refuses to run as another user", async () => {
    const error = await provider
      .doExec(sandbox, sh("true", { user: "somebody-else" }))
      .catch((e: unknown) => e);
    expect(SandboxError.isInstance(error) && error.code).toBe("NotSupported");
  });

  it("rejects an exec on a destroyed sandbox with NotFound", async () => {
    const gone = await provider.doCreate({}, call());
    await provider.doDestroy(gone, call());
    const error = await provider.doExec(gone, sh("true")).catch((e: unknown) => e);
    expect(SandboxError.isInstance(error) && error.code).toBe("NotFound");
  });
});

describe("bubblewrap isolation", () => {
  let provider: AnyLocalProvider;
  let sandbox: DriverSandbox<LocalSandboxHandle>;

  beforeAll(async () => {
    provider = providerFor("bwrap", state.home);
    sandbox = await provider.doCreate({}, call());
  });
  afterAll(async () => {
    await destroyAll(provider);
  });

  it("mounts the host read-only, /workspace and a persistent private /tmp read-write", async () => {
    const result = await run(
      provider,
      sandbox,
      "touch /etc/sbox-test 2>/dev/null && echo etc-writable; touch /workspace/w && echo ws-ok; echo kept > /tmp/t; ls /tmp",
    );
    expect(result.stdout).toBe("ws-ok\nt\n");
    expect((await run(provider, sandbox, "cat /tmp/t")).stdout).toBe("kept\n");
  });

  it("runs in a PID namespace of its own, without capabilities", async () => {
    const result = await run(provider, sandbox, "ls /proc | grep -c '^[0-9]'; grep CapEff /proc/self/status");
    const [count, caps] = result.stdout.trim().split("\n");
    // Only the sandbox's few processes are visible, not the host's.
    expect(Number(count)).toBeLessThan(10);
    expect(caps).toMatch(/CapEff:\s+0+$/);
    const hostPid = process.pid;
    expect(
      (await run(provider, sandbox, `kill -0 ${hostPid} 2>/dev/null && echo visible || echo hidden`)).stdout,
    ).toBe("hidden\n");
  });

  it("every command of a sandbox shares one PID namespace: a detached process outlives its command", async () => {
    const started = await run(
      provider,
      sandbox,
      "setsid sh -c 'sleep 300' >/dev/null 2>&1 < /dev/null & echo $!",
    );
    const pid = started.stdout.trim();
    const seen = await run(provider, sandbox, `kill -0 ${pid} && echo alive; kill ${pid}; echo killed`);
    expect(seen.stdout).toBe("alive\nkilled\n");
  });

  it.runIf(process.getuid?.() === 0)("cannot connect to daemon sockets under /run", async () => {
    const { createServer } = await import("node:net");
    const path = `/run/sbox-test-${process.pid}-${Date.now()}.sock`;
    const server = createServer((socket) => socket.end("daemon answered"));
    await new Promise<void>((resolve) => server.listen(path, resolve));
    try {
      const probe = (target: string) =>
        run(
          provider,
          sandbox,
          `python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(s.recv(64).decode())" '${target}' 2>&1 | tail -1`,
        );
      const result = await probe(path);
      expect(result.stdout).not.toContain("daemon answered");
      expect(result.stdout).toMatch(/refused|denied|No such/i);
      if (existsSync("/run/docker.sock"))
        expect((await probe("/run/docker.sock")).stdout).toMatch(/refused|denied|No such/i);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("hides the state root, so other sandboxes' files are not readable", async () => {
    // A root outside /tmp: under /tmp it would be hidden by the private /tmp anyway, proving nothing.
    const { dir: outside, cleanup } = tempOutsideTmp("root");
    const visible = providerFor("bwrap", outside);
    try {
      const one = await visible.doCreate({}, call());
      const other = await visible.doCreate({}, call());
      await run(visible, other, "echo secret > /workspace/s");
      const result = await run(
        visible,
        one,
        `cat '${other.native.workspace}/s' 2>&1; ls '${outside}' | wc -l`,
      );
      expect(result.stdout).not.toContain("secret");
      expect(result.stdout.trim().split("\n").pop()).toBe("0");
      // The same path is readable on the host: the mask is what hides it.
      expect(readFileSync(`${other.native.workspace}/s`, "utf8")).toBe("secret\n");
      await destroyAll(visible);
    } finally {
      cleanup();
    }
  });
});
