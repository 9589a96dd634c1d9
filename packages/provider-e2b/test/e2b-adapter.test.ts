/**
 * The adapter against the local test server, one sandbox lifecycle at a time. The last test checks that
 * every control-plane route and envd RPC the adapter calls was exercised here.
 */
import { createSandboxClient, type Sandbox } from "@sbox/core";
import { SandboxError } from "@sbox/core/spec";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startTestEnv, TEST_DOMAIN } from "./e2b-test-env.js";

let env: Awaited<ReturnType<typeof startTestEnv>>;
beforeAll(async () => {
  env = await startTestEnv();
});
afterAll(async () => {
  await env?.server.close();
});

const client = () => createSandboxClient({ provider: env.provider() });

async function codeOf(promise: PromiseLike<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(SandboxError.isInstance(error)).toBe(true);
    return (error as SandboxError).code;
  }
  return "resolved";
}

async function withSandbox<T>(run: (sandbox: Sandbox) => Promise<T>, spec = {}): Promise<T> {
  const sandbox = await client().create(spec);
  try {
    return await run(sandbox);
  } finally {
    await sandbox.destroy();
  }
}

function nativeId(sandbox: Sandbox): string {
  return sandbox.id.replace(/^e2b:/, "");
}

describe("lifecycle", () => {
  test("create honours template, env, metadata and ttl; getInfo reads it back live", async () => {
    await withSandbox(
      async (sandbox) => {
        const info = await sandbox.getInfo();
        expect(info.state).toBe("running");
        expect(info.metadata).toEqual({ team: "a b", "k/ü": "v=1&x" });
        const left = info.expiresAt!.getTime() - Date.now();
        expect(left).toBeGreaterThan(60_000);
        expect(left).toBeLessThanOrEqual(120_000);
        expect(env.server.sandboxes.get(nativeId(sandbox))?.templateID).toBe("other");
        const r = await sandbox.commands.run('printf "%s" "$GREETING"');
        expect(r.stdout).toBe("it's $(here) ü");
        await sandbox.setTimeout(600_000);
        const moved = (await sandbox.getInfo()).expiresAt!.getTime() - Date.now();
        expect(moved).toBeGreaterThan(500_000);
        expect(await codeOf(sandbox.setTimeout(0))).toBe("Validation");
      },
      {
        template: "other",
        env: { GREETING: "it's $(here) ü" },
        metadata: { team: "a b", "k/ü": "v=1&x" },
        ttlMs: 120_000,
      },
    );
  });

  test("list filters by metadata and state on E2B's side, and honours limit", async () => {
    const c = client();
    const tag = `t${Date.now()}`;
    const [a, b] = await Promise.all([
      c.create({ metadata: { tag, n: "a" } }),
      c.create({ metadata: { tag, n: "b" } }),
    ]);
    try {
      const ids = async (filter: Parameters<typeof c.list>[0]) => {
        const out: string[] = [];
        for await (const info of c.list(filter)) out.push(info.id);
        return out.sort();
      };
      expect(await ids({ metadata: { tag } })).toEqual([a.id, b.id].sort());
      expect(await ids({ metadata: { tag, n: "b" } })).toEqual([b.id]);
      expect(await ids({ metadata: { tag }, limit: 1 })).toHaveLength(1);
      expect(await ids({ metadata: { tag }, state: "stopped" })).toEqual([]);
      await b.pause();
      expect(await ids({ metadata: { tag }, state: "paused" })).toEqual([b.id]);
      expect(await ids({ metadata: { tag }, state: "running" })).toEqual([a.id]);
    } finally {
      await Promise.all([a.destroy(), b.destroy()]);
    }
  });

  test("pause freezes processes and keeps files; daemon calls then fail InvalidState; resume continues", async () => {
    await withSandbox(async (sandbox) => {
      await sandbox.files.write("kept.txt", "kept");
      const proc = await sandbox.commands.spawn("sleep 300");
      await sandbox.pause();
      expect((await sandbox.getInfo()).state).toBe("paused");
      expect(await codeOf(sandbox.commands.run("true"))).toBe("InvalidState");
      await sandbox.resume();
      expect((await sandbox.getInfo()).state).toBe("running");
      expect(await sandbox.files.readText("kept.txt")).toBe("kept");
      expect((await sandbox.commands.list()).some((p) => p.pid === proc.pid && p.running)).toBe(true);
      await proc.kill();
    });
  });

  test("a second client's connect resumes a paused sandbox (E2B's connect)", async () => {
    await withSandbox(async (sandbox) => {
      await sandbox.pause();
      const other = await client().connect(sandbox.id);
      expect((await other.getInfo()).state).toBe("running");
    });
  });

  test("destroy is idempotent; afterwards getInfo says destroyed and daemon calls are NotFound", async () => {
    const sandbox = await client().create();
    await sandbox.destroy();
    await sandbox.destroy();
    expect((await sandbox.getInfo()).state).toBe("destroyed");
    expect(await codeOf(sandbox.commands.run("true"))).toBe("NotFound");
    expect(await codeOf(sandbox.files.read("/etc/hostname"))).toBe("NotFound");
    expect(await codeOf(client().connect(sandbox.id))).toBe("NotFound");
  });

  test("a ttl is enforced by E2B itself", async () => {
    const sandbox = await client().create({ ttlMs: 1_000 });
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect((await sandbox.getInfo()).state).toBe("destroyed");
  });

  test("metrics come from the control plane", async () => {
    await withSandbox(async (sandbox) => {
      const m = await sandbox.metrics();
      expect(m.at).toBeInstanceOf(Date);
      expect(m.memoryLimitBytes).toBeGreaterThan(0);
      expect(m.memoryBytes).toBeGreaterThanOrEqual(0);
      expect(m.diskBytes).toBeGreaterThan(0);
    });
  });

  test("fork makes independent copies with the parent's files", async () => {
    await withSandbox(async (parent) => {
      await parent.files.write("shared.txt", "from parent");
      const children = await parent.fork!({ count: 2 });
      try {
        expect(children).toHaveLength(2);
        for (const child of children) expect(await child.files.readText("shared.txt")).toBe("from parent");
        await children[0]!.files.write("shared.txt", "changed");
        expect(await parent.files.readText("shared.txt")).toBe("from parent");
        expect(await children[1]!.files.readText("shared.txt")).toBe("from parent");
      } finally {
        await Promise.all(children.map((c) => c.destroy()));
      }
    });
  });

  test("egress rules go to E2B at create and on change", async () => {
    await withSandbox(
      async (sandbox) => {
        const record = () => env.server.sandboxes.get(nativeId(sandbox))?.network;
        expect(record()).toMatchObject({ denyOut: ["0.0.0.0/0"] });
        await sandbox.network!.setEgress({ allow: ["example.com", "10.0.0.0/8"] });
        expect(record()).toEqual({ allowOut: ["example.com", "10.0.0.0/8"], denyOut: ["0.0.0.0/0"] });
        await sandbox.network!.setEgress("allow-all");
        expect(record()).toEqual({});
        expect(await codeOf(sandbox.network!.setEgress({ allow: ["has space"] }))).toBe("Validation");
      },
      { network: { egress: "block-all" } },
    );
  });

  test("a port's URL is E2B's per-port host", async () => {
    await withSandbox(async (sandbox) => {
      const info = await sandbox.ports!.expose(3000);
      expect(info).toEqual({ port: 3000, url: `https://3000-${nativeId(sandbox)}.${TEST_DOMAIN}` });
      expect(await codeOf(sandbox.ports!.expose(70_000))).toBe("Validation");
    });
  });
});

describe("commands", () => {
  test("argv reaches the program byte-exact; cwd and env are per command", async () => {
    await withSandbox(async (sandbox) => {
      const hostile = ["it's", '"q"', "$(echo pwned)", "`x`", "a\nb", "ünï 🎉", "-n", "*", ""];
      const r = await sandbox.commands.run(["printf", "%s\\0", ...hostile]);
      expect(r.stdout.split("\0").slice(0, -1)).toEqual(hostile);
      await sandbox.files.mkdir("dir with space", { recursive: true });
      const w = await sandbox.commands.run('pwd; printf %s "$X"', {
        cwd: "dir with space",
        env: { X: "x'y" },
      });
      expect(w.stdout).toMatch(/\/dir with space\nx'y$/);
      expect((await sandbox.commands.run("exit 7")).exitCode).toBe(7);
    });
  });

  test("stdin as bytes and as a stream reaches the command and is closed", async () => {
    await withSandbox(async (sandbox) => {
      const bytes = new Uint8Array(300_000).map((_, i) => i % 256);
      const r = await sandbox.commands.run("wc -c", { stdin: bytes });
      expect(r.stdout.trim()).toBe("300000");
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("one\n"));
          controller.enqueue(new TextEncoder().encode("two\n"));
          controller.close();
        },
      });
      expect((await sandbox.commands.run("cat", { stdin: stream })).stdout).toBe("one\ntwo\n");
    });
  });

  test("a timeout kills the whole tree and rejects with Timeout", async () => {
    await withSandbox(async (sandbox) => {
      const marker = `tree-${Date.now()}`;
      const code = await codeOf(
        sandbox.commands.run(
          `(while :; do sleep 1; done) & sh -c 'while :; do sleep 1; done' ${marker} & wait`,
          {
            timeoutMs: 1_500,
          },
        ),
      );
      expect(code).toBe("Timeout");
      await new Promise((resolve) => setTimeout(resolve, 300));
      const left = await sandbox.commands.run(`ps -eo args | grep -c '[w]hile :.*${marker}' || true`);
      expect(left.stdout.trim()).toBe("0");
    });
  });

  test("kill reaches children forked while the tree is walked", async () => {
    await withSandbox(async (sandbox) => {
      // A unique duration, so processes of other tests on this machine are not counted.
      const seconds = 10_000 + Math.floor(Math.random() * 5000);
      const count = `ps -eo args | grep -c -e '^sleep ${seconds}$' || true`;
      // Bounded: at most 400 children, each a sleep that the kill must reach.
      const forker = await sandbox.commands.spawn(
        `i=0; while [ $i -lt 400 ]; do sleep ${seconds} & i=$((i+1)); done; wait`,
      );
      for (let tries = 0; Number((await sandbox.commands.run(count)).stdout.trim()) < 5; tries++) {
        if (tries > 100) throw new Error("the forker never started its children");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await sandbox.commands.kill(forker.pid, "SIGKILL");
      await forker.wait();
      expect((await sandbox.commands.run(count)).stdout.trim()).toBe("0");
    });
  });

  test("spawn, list, connect from a second client, stdin and kill", async () => {
    await withSandbox(async (sandbox) => {
      const proc = await sandbox.commands.spawn("cat; echo done; exit 4");
      const listed = await sandbox.commands.list();
      expect(listed.find((p) => p.pid === proc.pid)?.command).toBe("cat; echo done; exit 4");
      const other = await client().connect(sandbox.id);
      const attached = await other.commands.connect(proc.pid);
      let out = "";
      const reading = (async () => {
        for await (const chunk of attached.stdout) out += chunk;
      })();
      await proc.writeStdin("hello\n");
      await proc.closeStdin();
      expect((await attached.wait()).exitCode).toBe(4);
      await reading;
      expect(out).toBe("hello\ndone\n");
      // Unique durations, so processes of other tests on this machine are not counted.
      const seconds = 3000 + Math.floor(Math.random() * 5000);
      const sleeper = await sandbox.commands.spawn(`sleep ${seconds} & sleep ${seconds + 1} & wait`);
      const count = `ps -eo args | grep -c -e '^sleep ${seconds}$' -e '^sleep ${seconds + 1}$' || true`;
      // Kill only once both children exist: a tree walked before the shell forked cannot include them.
      for (let tries = 0; (await sandbox.commands.run(count)).stdout.trim() !== "2"; tries++) {
        if (tries > 100) throw new Error("the sleeps never started");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // Without a signal: SIGTERM first (the shell ends on it), SIGKILL only after the grace period.
      await sandbox.commands.kill(sleeper.pid);
      const exit = await sleeper.wait();
      expect(exit.signal).toBe("SIGTERM");
      const rest = await sandbox.commands.run(count);
      expect(rest.stdout.trim()).toBe("0");
      expect(await codeOf(sandbox.commands.kill(999_999))).toBe("NotFound");
      expect(await codeOf(sandbox.commands.connect(999_999))).toBe("NotFound");
    });
  });

  test("a pty runs an interactive shell, sees resize and exits", async () => {
    await withSandbox(async (sandbox) => {
      let output = "";
      const decoder = new TextDecoder();
      const term = await sandbox.pty!.create({
        cols: 80,
        rows: 24,
        onData: (d) => (output += decoder.decode(d)),
      });
      await term.resize(100, 30);
      await term.write("stty size; exit 3\n");
      expect((await term.wait()).exitCode).toBe(3);
      expect(output).toContain("30 100");
    });
  });
});

describe("files", () => {
  test("binary roundtrip, streams, mode, list and stat types", async () => {
    await withSandbox(async (sandbox) => {
      const bytes = new Uint8Array(256).map((_, i) => i);
      await sandbox.files.write("d/all.bin", bytes);
      expect(await sandbox.files.read("d/all.bin")).toEqual(bytes);
      const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => (i * 7) % 251);
      await sandbox.files.write(
        "d/big.bin",
        new ReadableStream({
          start(c) {
            c.enqueue(big.subarray(0, 1_000_000));
            c.enqueue(big.subarray(1_000_000));
            c.close();
          },
        }),
      );
      const chunks: Uint8Array[] = [];
      for await (const chunk of sandbox.files.readStream(
        "d/big.bin",
      ) as unknown as AsyncIterable<Uint8Array>) {
        chunks.push(chunk);
      }
      expect(Buffer.concat(chunks).equals(Buffer.from(big))).toBe(true);
      await sandbox.files.write("d/run.sh", "#!/bin/sh\necho ran\n", { mode: 0o755 });
      expect((await sandbox.commands.run("./d/run.sh")).stdout).toBe("ran\n");
      expect((await sandbox.files.stat("d/run.sh")).mode! & 0o777).toBe(0o755);
      await sandbox.commands.run("cd d && ln -s all.bin link && mkdir sub && mkfifo pipe");
      const entries = await sandbox.files.list("d");
      const types = Object.fromEntries(entries.map((e) => [e.name, e.type]));
      expect(types).toMatchObject({ "all.bin": "file", link: "symlink", sub: "dir" });
      expect((await sandbox.files.stat("d/link")).type).toBe("symlink");
      expect((await sandbox.files.stat("d/pipe")).type).toBe("other");
    });
  });

  test("mkdir, remove and rename keep POSIX semantics over E2B's forgiving calls", async () => {
    await withSandbox(async (sandbox) => {
      expect(await codeOf(sandbox.files.mkdir("no/parent"))).toBe("NotFound");
      await sandbox.files.mkdir("a/b/c", { recursive: true });
      await sandbox.files.mkdir("a/b/c", { recursive: true });
      expect(await codeOf(sandbox.files.mkdir("a/b/c"))).toBe("Conflict");
      await sandbox.files.write("a/b/c/f", "x");
      expect(await codeOf(sandbox.files.remove("a"))).toBe("Conflict");
      expect(await sandbox.files.exists("a/b/c/f")).toBe(true);
      expect(await codeOf(sandbox.files.remove("missing"))).toBe("NotFound");
      await sandbox.files.rename("a/b/c/f", "moved/deeper/g");
      expect(await sandbox.files.readText("moved/deeper/g")).toBe("x");
      expect(await codeOf(sandbox.files.rename("missing", "x"))).toBe("NotFound");
      await sandbox.files.remove("a", { recursive: true });
      expect(await sandbox.files.exists("a")).toBe(false);
      expect(await codeOf(sandbox.files.read("moved"))).toBe("Validation");
      expect(await codeOf(sandbox.files.list("moved/deeper/g"))).toBe("Validation");
    });
  });

  test("watch reports create, modify and delete until closed", async () => {
    await withSandbox(async (sandbox) => {
      await sandbox.files.mkdir("w", { recursive: true });
      const dir = (await sandbox.files.stat("w")).path;
      const events: string[] = [];
      const watcher = await sandbox.files.watch(dir, (e) => events.push(`${e.type} ${e.path}`), {
        recursive: true,
      });
      await sandbox.commands.run(
        "printf 1 > w/f && printf 2 >> w/f && mkdir -p w/s/t && printf 3 > w/s/t/n && rm w/f",
      );
      const until = Date.now() + 10_000;
      while (Date.now() < until && !events.includes(`delete ${dir}/f`))
        await new Promise((r) => setTimeout(r, 50));
      await watcher.close();
      expect(events).toEqual(
        expect.arrayContaining([
          `create ${dir}/f`,
          `modify ${dir}/f`,
          `delete ${dir}/f`,
          `create ${dir}/s/t/n`,
        ]),
      );
      const count = events.length;
      await sandbox.commands.run("printf 4 > w/after");
      await new Promise((r) => setTimeout(r, 500));
      expect(events).toHaveLength(count);
    });
  });
});

test("every control-plane route and envd RPC the adapter calls was exercised", () => {
  const expected = [
    "POST /v2/sandboxes",
    "GET /v2/sandboxes",
    "GET /sandboxes/{id}",
    "DELETE /sandboxes/{id}",
    "POST /sandboxes/{id}/timeout",
    "POST /sandboxes/{id}/pause",
    "POST /v2/sandboxes/{id}/connect",
    "GET /sandboxes/{id}/metrics",
    "PUT /sandboxes/{id}/network",
    "POST /sandboxes/{id}/fork",
    "rpc process.Process/Start",
    "rpc process.Process/Connect",
    "rpc process.Process/List",
    "rpc process.Process/SendInput",
    "rpc process.Process/SendSignal",
    "rpc process.Process/CloseStdin",
    "rpc process.Process/Update",
    "rpc filesystem.Filesystem/Stat",
    "rpc filesystem.Filesystem/ListDir",
    "rpc filesystem.Filesystem/MakeDir",
    "rpc filesystem.Filesystem/Move",
    "rpc filesystem.Filesystem/Remove",
    "rpc filesystem.Filesystem/WatchDir",
    "GET /files",
    "POST /files",
  ];
  const missing = expected.filter((route) => !env.server.routes.has(route));
  expect(missing).toEqual([]);
});
