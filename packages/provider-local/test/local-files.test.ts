import { readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import type { DriverSandbox } from "@sbox/core/spec";
import { SandboxError, type WatchEvent } from "@sbox/core/spec";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalSandboxHandle } from "../src/index.js";
import {
  type AnyLocalProvider,
  call,
  destroyAll,
  eventually,
  MODES,
  providerFor,
  run,
  tempOutsideTmp,
  tempStateRoot,
} from "./helpers.js";

const state = tempStateRoot("files");
afterAll(() => state.cleanup());

const decode = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (error === undefined) return undefined;
  if (!SandboxError.isInstance(error)) throw error;
  return error.code;
}

describe.each(MODES)("files (%s)", (mode) => {
  let provider: AnyLocalProvider;
  let sandbox: DriverSandbox<LocalSandboxHandle>;
  const encode = (text: string) => new TextEncoder().encode(text);
  // Paths come back as commands see them: the sandbox path under bubblewrap, the host path without isolation.
  const ws = () => (mode === "bwrap" ? "/workspace" : sandbox.native.workspace);

  beforeAll(async () => {
    provider = providerFor(mode, state.home);
    sandbox = await provider.doCreate({}, call());
  });
  afterAll(async () => {
    await destroyAll(provider);
  });

  it("writes and reads text and all 256 byte values, and commands see the same bytes", async () => {
    const all = new Uint8Array(256 * 4).map((_, i) => i % 256);
    await provider.doWriteFile!(sandbox, "nested/dirs/bin.dat", all, call());
    expect(
      Buffer.from(await provider.doReadFile!(sandbox, "/workspace/nested/dirs/bin.dat", call())).equals(
        Buffer.from(all),
      ),
    ).toBe(true);
    const viaCommand = await run(
      provider,
      sandbox,
      "od -An -tx1 nested/dirs/bin.dat | tr -d ' \\n' | head -c 8",
    );
    expect(viaCommand.stdout).toBe("00010203");
    await run(provider, sandbox, "printf 'from command' > made.txt");
    expect(decode(await provider.doReadFile!(sandbox, "made.txt", call()))).toBe("from command");
    await provider.doWriteFile!(sandbox, "/tmp/in-tmp.txt", encode("tmp file"), call());
    const tmpPath = mode === "bwrap" ? "/tmp/in-tmp.txt" : `${sandbox.native.tmp}/in-tmp.txt`;
    expect((await run(provider, sandbox, `cat '${tmpPath}'`)).stdout).toBe("tmp file");
  });

  it("handles empty files, names with spaces, quotes, newlines and unicode", async () => {
    await provider.doWriteFile!(sandbox, "empty", new Uint8Array(), call());
    expect((await provider.doReadFile!(sandbox, "empty", call())).byteLength).toBe(0);
    const names = ["with space", 'it\'s "quoted"', "new\nline", "ünïcødé-🚀", "$(echo no)"];
    for (const name of names) await provider.doWriteFile!(sandbox, `odd/${name}`, encode(name), call());
    const listed = await provider.doListFiles!(sandbox, "odd", call());
    expect(listed.map((entry) => entry.name).sort()).toEqual([...names].sort());
    for (const name of names)
      expect(decode(await provider.doReadFile!(sandbox, `odd/${name}`, call()))).toBe(name);
    expect(listed.every((entry) => entry.path === `${ws()}/odd/${entry.name}` && entry.type === "file")).toBe(
      true,
    );
  });

  it("applies an explicit mode literally", async () => {
    await provider.doWriteFile!(sandbox, "script.sh", encode("#!/bin/sh\necho ran\n"), {
      ...call(),
      mode: 0o750,
    });
    expect((await provider.doStat!(sandbox, "script.sh", call())).mode).toBe(0o750);
    expect((await run(provider, sandbox, "./script.sh")).stdout).toBe("ran\n");
  });

  it("lists types, stats without following symlinks, and tells missing from other failures", async () => {
    await provider.doMkdir!(sandbox, "kinds/dir", { ...call(), recursive: true });
    await provider.doWriteFile!(sandbox, "kinds/file", encode("12345"), call());
    await run(provider, sandbox, "ln -s file kinds/link && mkfifo kinds/fifo");
    const entries = await provider.doListFiles!(sandbox, "kinds", call());
    expect(Object.fromEntries(entries.map((e) => [e.name, e.type]))).toEqual({
      dir: "dir",
      fifo: "other",
      file: "file",
      link: "symlink",
    });
    const file = await provider.doStat!(sandbox, "/workspace/kinds/file", call());
    expect(file).toMatchObject({ name: "file", path: `${ws()}/kinds/file`, type: "file", size: 5 });
    expect((await provider.doStat!(sandbox, "kinds/link", call())).type).toBe("symlink");
    expect(decode(await provider.doReadFile!(sandbox, "kinds/link", call()))).toBe("12345");
    expect(await codeOf(provider.doStat!(sandbox, "kinds/missing", call()))).toBe("NotFound");
    expect(await codeOf(provider.doReadFile!(sandbox, "kinds/missing", call()))).toBe("NotFound");
    expect(await codeOf(provider.doReadFile!(sandbox, "kinds/dir", call()))).toBe("Validation");
    // A FIFO would block a read forever: refused at once instead.
    expect(await codeOf(provider.doReadFile!(sandbox, "kinds/fifo", call()))).toBe("Validation");
    expect(await codeOf(provider.doStat!(sandbox, "kinds/file/below", call()))).toBe("Validation");
  });

  it("mkdir, remove (recursive or not) and rename, with precise errors", async () => {
    await provider.doMkdir!(sandbox, "m/a/b", { ...call(), recursive: true });
    await provider.doMkdir!(sandbox, "m/a/b", { ...call(), recursive: true });
    expect(await codeOf(provider.doMkdir!(sandbox, "m/a/b", { ...call(), recursive: false }))).toBe(
      "Conflict",
    );
    expect(await codeOf(provider.doMkdir!(sandbox, "m/x/y", { ...call(), recursive: false }))).toBe(
      "NotFound",
    );
    await provider.doWriteFile!(sandbox, "m/a/b/f", encode("f"), call());
    expect(await codeOf(provider.doRemove!(sandbox, "m/a", { ...call(), recursive: false }))).toBe(
      "Conflict",
    );
    await provider.doRename!(sandbox, "m/a/b/f", "m/renamed", call());
    expect(decode(await provider.doReadFile!(sandbox, "m/renamed", call()))).toBe("f");
    await provider.doRename!(sandbox, "m/renamed", "/tmp/moved", call());
    expect(decode(await provider.doReadFile!(sandbox, "/tmp/moved", call()))).toBe("f");
    await provider.doRemove!(sandbox, "m", { ...call(), recursive: true });
    expect(await codeOf(provider.doStat!(sandbox, "m", call()))).toBe("NotFound");
    expect(await codeOf(provider.doRemove!(sandbox, "m", { ...call(), recursive: true }))).toBe("NotFound");
    expect(await codeOf(provider.doRename!(sandbox, "nothing-here", "x", call()))).toBe("NotFound");
    expect(await codeOf(provider.doRemove!(sandbox, "/workspace", { ...call(), recursive: true }))).toBe(
      "Validation",
    );
  });

  it("streams a 20 MB file in and out without holding it whole", async () => {
    const size = 20 * 1024 * 1024;
    let produced = 0;
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (produced >= size) return controller.close();
        const chunk = new Uint8Array(Math.min(1024 * 1024, size - produced)).map(
          (_, i) => (produced + i) % 251,
        );
        produced += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    await provider.doWriteFileStream!(sandbox, "big/file.bin", source, call());
    expect((await run(provider, sandbox, "wc -c < big/file.bin")).stdout.trim()).toBe(String(size));
    const stream = await provider.doReadFileStream!(sandbox, "big/file.bin", call());
    let read = 0;
    let chunks = 0;
    let ok = true;
    for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
      for (let i = 0; i < chunk.byteLength; i += 4099) ok &&= chunk[i] === (read + i) % 251;
      read += chunk.byteLength;
      chunks++;
    }
    expect(read).toBe(size);
    expect(chunks).toBeGreaterThan(10);
    expect(ok).toBe(true);
  });

  it("reads a whole file holding its bytes once (issue #13: no chunks collected and copied)", async () => {
    const size = 100 * 1024 * 1024;
    await run(provider, sandbox, `head -c ${size} /dev/zero > big/whole.bin`);
    // Array buffers are counted exactly by V8 (RSS is not): a collect-and-copy read held about twice the size.
    globalThis.gc?.();
    const before = process.memoryUsage().arrayBuffers;
    let peak = before;
    const timer = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    }, 1);
    const bytes = await provider.doReadFile!(sandbox, "big/whole.bin", call());
    clearInterval(timer);
    peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    expect(bytes.byteLength).toBe(size);
    expect(peak - before).toBeLessThan(size * 1.2);
    await run(provider, sandbox, "rm big/whole.bin");
  });

  it("refuses path traversal and absolute paths outside the sandbox, touching nothing", async () => {
    const hostile = [
      "../escape",
      "/etc/passwd",
      "a/../../..",
      "/workspace/../etc/hostname",
      "/",
      "/proc/self/environ",
    ];
    for (const path of hostile) {
      expect(await codeOf(provider.doReadFile!(sandbox, path, call())), path).toBe("Validation");
      expect(await codeOf(provider.doWriteFile!(sandbox, path, encode("x"), call())), path).toBe(
        "Validation",
      );
      expect(await codeOf(provider.doListFiles!(sandbox, path, call())), path).toBe("Validation");
    }
    expect(() => statSync(`${sandbox.native.dir}/escape`)).toThrow();
    // A dot-dot that stays inside is fine.
    await provider.doWriteFile!(sandbox, "inside/../kept.txt", encode("ok"), call());
    expect(decode(await provider.doReadFile!(sandbox, "kept.txt", call()))).toBe("ok");
  });

  it("never follows a symlink out of the sandbox, for reads, writes, lists and parents", async () => {
    const outside = tempOutsideTmp(`victim-${mode}`);
    const victim = `${outside.dir}/victim.txt`;
    writeFileSync(victim, "host secret");
    // An absolute target names a sandbox path: a link to the host's /tmp/... points into the sandbox's own /tmp.
    const hostTmpVictim = `${state.home}/victim-${mode}.txt`;
    writeFileSync(hostTmpVictim, "host tmp secret");
    symlinkSync(hostTmpVictim, `${sandbox.native.workspace}/host-tmp`);
    expect(await codeOf(provider.doReadFile!(sandbox, "host-tmp", call()))).toBe("NotFound");
    const ws = sandbox.native.workspace;
    symlinkSync(victim, `${ws}/host-abs`);
    symlinkSync("/etc", `${ws}/etc-dir`);
    symlinkSync("../../..", `${ws}/up`);
    await run(provider, sandbox, "ln -s /etc/passwd made-inside");
    for (const path of ["host-abs", "etc-dir/passwd", "up/victim.txt", "made-inside"]) {
      expect(await codeOf(provider.doReadFile!(sandbox, path, call())), path).toBe("Validation");
      expect(await codeOf(provider.doWriteFile!(sandbox, path, encode("pwned"), call())), path).toBe(
        "Validation",
      );
    }
    expect(await codeOf(provider.doListFiles!(sandbox, "etc-dir", call()))).toBe("Validation");
    expect(await codeOf(provider.doWriteFile!(sandbox, "etc-dir/new-file", encode("x"), call()))).toBe(
      "Validation",
    );
    expect(await codeOf(provider.doMkdir!(sandbox, "up/made", { ...call(), recursive: true }))).toBe(
      "Validation",
    );
    expect(readFileSync(victim, "utf8")).toBe("host secret");
    const message = await provider.doReadFile!(sandbox, "host-abs", call()).catch((e: Error) => e.message);
    expect(message).toContain("symlink");
    // The link itself can be inspected and removed, never its target.
    expect((await provider.doStat!(sandbox, "host-abs", call())).type).toBe("symlink");
    await provider.doRemove!(sandbox, "host-abs", { ...call(), recursive: false });
    expect(readFileSync(victim, "utf8")).toBe("host secret");
    expect(readFileSync(hostTmpVictim, "utf8")).toBe("host tmp secret");
    outside.cleanup();
  });

  it("follows symlinks that stay inside, also absolute sandbox paths", async () => {
    await provider.doWriteFile!(sandbox, "real/target.txt", encode("target"), call());
    symlinkSync("/workspace/real", `${sandbox.native.workspace}/abs-inside`);
    symlinkSync("real/target.txt", `${sandbox.native.workspace}/rel-inside`);
    expect(decode(await provider.doReadFile!(sandbox, "abs-inside/target.txt", call()))).toBe("target");
    expect(decode(await provider.doReadFile!(sandbox, "rel-inside", call()))).toBe("target");
    symlinkSync("loop-b", `${sandbox.native.workspace}/loop-a`);
    symlinkSync("loop-a", `${sandbox.native.workspace}/loop-b`);
    expect(await codeOf(provider.doReadFile!(sandbox, "loop-a", call()))).toBe("Validation");
  });

  it("watches for create, modify and delete events, recursively", async () => {
    await provider.doMkdir!(sandbox, "watched/deep", { ...call(), recursive: true });
    const events: WatchEvent[] = [];
    const watcher = await provider.doWatch!(sandbox, "watched", {
      ...call(),
      recursive: true,
      onEvent: (event) => events.push(event),
    });
    try {
      const seen = (type: WatchEvent["type"], path: string) =>
        eventually(() => events.some((e) => e.type === type && e.path === path), 5_000);
      await run(provider, sandbox, "echo a > watched/deep/f");
      expect(await seen("create", `${ws()}/watched/deep/f`)).toBe(true);
      await run(provider, sandbox, "echo more >> watched/deep/f");
      expect(await seen("modify", `${ws()}/watched/deep/f`)).toBe(true);
      await provider.doRemove!(sandbox, "watched/deep/f", { ...call(), recursive: false });
      expect(await seen("delete", `${ws()}/watched/deep/f`)).toBe(true);
    } finally {
      await watcher.close();
    }
    const count = events.length;
    await run(provider, sandbox, "echo late > watched/late");
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(events.length).toBe(count);
  });

  it("refuses to watch outside the sandbox or a missing path", async () => {
    const options = { ...call(), recursive: true, onEvent: () => {} };
    expect(await codeOf(provider.doWatch!(sandbox, "/etc", options))).toBe("Validation");
    expect(await codeOf(provider.doWatch!(sandbox, "not-there", options))).toBe("NotFound");
  });
});
