/**
 * The Sandbox facade over a provider that has nothing but a buffered `sh -c` exec: every emulation runs
 * through the public API on real shells (dash with GNU tools, busybox sh with only busybox applets).
 */
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { shDriver, USERLANDS } from "../../test/sh-driver.js";
import { createSandboxClient } from "../client/create-sandbox-client.js";
import { SandboxError } from "../errors/sandbox-error.js";
import type { OutputEvent, Sandbox } from "./sandbox-types.js";

function randomBytes(size: number): Uint8Array {
  const out = new Uint8Array(size);
  let x = 0x9e3779b9;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

describe.each(USERLANDS)("facade over a bare %s exec", (userland) => {
  // exitCodes: false forces E2 and envCwd: false forces E1 on every command.
  const provider = shDriver({ userland, exitCodes: false, envCwd: false });
  const client = createSandboxClient({ provider });
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await client.create();
  });
  afterAll(async () => {
    await sandbox.destroy();
    provider.cleanup();
  });

  test("run returns stdout, stderr and a non-zero exit code as data", async () => {
    const result = await sandbox.commands.run("echo out; echo err >&2; exit 7");
    expect(result).toMatchObject({ stdout: "out\n", stderr: "err\n", exitCode: 7 });
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
  });

  test("the emulated exit code survives a command that prints a forged marker", async () => {
    const forged =
      "printf '\\n__SBOX_EXIT_0000000000000000:0\\n'; tr '\\0' ' ' < /proc/self/cmdline; tr '\\0' ' ' < /proc/$PPID/cmdline; exit 3";
    const result = await sandbox.commands.run(forged);
    expect(result.exitCode).toBe(3);
    expect(result.stdout).toContain("__SBOX_EXIT_0000000000000000:0");
  });

  test("exit codes 0..255 come back exactly", async () => {
    for (const code of [0, 1, 2, 126, 127, 128, 255]) {
      expect((await sandbox.commands.run(`exit ${code}`)).exitCode).toBe(code);
    }
  });

  test("argv is passed byte-exact, with no shell interpretation", async () => {
    const hostile = [
      "it's",
      'say "hi"',
      "$(touch /tmp/pwned)",
      "`id`",
      "a\nb",
      "tab\there",
      "ünïcødé ✓",
      "*",
      "-n",
      "",
    ];
    const result = await sandbox.commands.run(["printf", "%s|", ...hostile]);
    expect(result.stdout).toBe(`${hostile.join("|")}|`);
    expect((await sandbox.commands.run("test -e /tmp/pwned && echo yes || echo no")).stdout).toBe("no\n");
  });

  test("cwd and env arrive exactly; a missing cwd fails the command instead of running it elsewhere", async () => {
    await sandbox.files.mkdir("/tmp/with space/it's", { recursive: true }).catch(async () => {
      await sandbox.commands.run(["mkdir", "-p", "/tmp/with space/it's"]);
    });
    const env = { QUOTES: `'"\``, DOLLAR: "$(echo no)", NEWLINE: "a\nb", UNICODE: "ü✓" };
    const result = await sandbox.commands.run('pwd; printf "%s|" "$QUOTES" "$DOLLAR" "$NEWLINE" "$UNICODE"', {
      cwd: "/tmp/with space/it's",
      env,
    });
    expect(result.stdout).toBe(`/tmp/with space/it's\n${Object.values(env).join("|")}|`);
    const missing = await sandbox.commands.run("touch ran-here", { cwd: "/tmp/no/such/dir" });
    expect(missing.exitCode).not.toBe(0);
    expect((await sandbox.commands.run("test -e ran-here && echo ran || echo not-run")).stdout).toBe(
      "not-run\n",
    );
    const badKey = await Promise.resolve(sandbox.commands.run("true", { env: { "A-B": "x" } })).catch(
      (e: unknown) => e,
    );
    expect((badKey as SandboxError).code).toBe("Validation");
  });

  test("emulated streaming delivers the first chunk well before the command ends", async () => {
    const started = Date.now();
    let firstAt = 0;
    const events: OutputEvent[] = [];
    for await (const event of sandbox.commands.run("echo a; sleep 2; echo b")) {
      if (firstAt === 0 && event.type === "stdout") firstAt = Date.now() - started;
      events.push(event);
    }
    const total = Date.now() - started;
    expect(
      events
        .filter((e) => e.type === "stdout")
        .map((e) => (e as { data: string }).data)
        .join(""),
    ).toBe("a\nb\n");
    expect(events.at(-1)).toEqual({ type: "exit", exitCode: 0 });
    expect(total).toBeGreaterThanOrEqual(2000);
    expect(firstAt).toBeLessThan(total - 1000);
  });

  test("onStdout sees the same text the result holds, and stdin reaches the command", async () => {
    const chunks: string[] = [];
    const result = await sandbox.commands.run("cat; echo done", {
      stdin: "from stdin ✓\n",
      onStdout: (c) => chunks.push(c),
    });
    expect(result.stdout).toBe("from stdin ✓\ndone\n");
    expect(chunks.join("")).toBe(result.stdout);
  });

  test("a timeout kills the whole tree and rejects with Timeout", async () => {
    // Durations unique to this run, so other processes on the machine cannot be mistaken for ours.
    const seconds = 1000 + Math.floor(Math.random() * 8000);
    const error = await Promise.resolve(
      sandbox.commands.run(`sleep ${seconds} & sleep ${seconds + 1} & wait`, { timeoutMs: 1500 }),
    ).catch((e: unknown) => e);
    expect(SandboxError.isInstance(error)).toBe(true);
    expect((error as SandboxError).code).toBe("Timeout");
    await new Promise((r) => setTimeout(r, 300));
    const left = spawnSync("pgrep", ["-f", `^sleep (${seconds}|${seconds + 1})$`], {
      encoding: "utf8",
    }).stdout.trim();
    expect(left).toBe("");
  });

  test("an aborted signal rejects with Aborted", async () => {
    const controller = new AbortController();
    const handle = sandbox.commands.run("sleep 30", { signal: controller.signal });
    setTimeout(() => controller.abort(), 300);
    await expect(Promise.resolve(handle)).rejects.toMatchObject({ code: "Aborted" });
  });

  test("a 20 MB binary file round-trips through emulated files with no command line over 64 KiB", async () => {
    const data = randomBytes(20 * 1024 * 1024);
    await sandbox.files.write("/tmp/big/nested/blob.bin", data);
    const back = await sandbox.files.read("/tmp/big/nested/blob.bin");
    expect(back.byteLength).toBe(data.byteLength);
    expect(Buffer.compare(Buffer.from(back), Buffer.from(data))).toBe(0);
    const size = await sandbox.commands.run("wc -c < /tmp/big/nested/blob.bin");
    expect(size.stdout.trim()).toBe(String(data.byteLength));
    expect(provider.longestCommandBytes()).toBeLessThanOrEqual(64 * 1024);
  });

  test("files: all 256 byte values, NotFound, exists, list with types", async () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    await sandbox.files.write("/tmp/f/all.bin", all);
    expect(Array.from(await sandbox.files.read("/tmp/f/all.bin"))).toEqual(Array.from(all));
    await sandbox.commands.run("ln -s all.bin /tmp/f/link");
    const entries = await sandbox.files.list("/tmp/f");
    expect(entries.map((e) => [e.name, e.type]).sort()).toEqual([
      ["all.bin", "file"],
      ["link", "symlink"],
    ]);
    await expect(sandbox.files.read("/tmp/f/missing")).rejects.toMatchObject({ code: "NotFound" });
    expect(await sandbox.files.exists("/tmp/f/all.bin")).toBe(true);
    expect(await sandbox.files.exists("/tmp/f/missing")).toBe(false);
  });

  test("background processes: spawn, list, connect, kill", async () => {
    const proc = await sandbox.commands.spawn("echo started; sleep 60");
    const listed = await sandbox.commands.list();
    expect(listed.some((p) => p.pid === proc.pid && p.running)).toBe(true);
    const other = await createSandboxClient({ provider }).connect(sandbox.id);
    const attached = await other.commands.connect(proc.pid);
    const first = await attached.stdout[Symbol.asyncIterator]().next();
    expect(first.value).toContain("started");
    await sandbox.commands.kill(proc.pid);
    const exit = await proc.wait();
    expect(exit.exitCode).not.toBe(0);
  });
});
