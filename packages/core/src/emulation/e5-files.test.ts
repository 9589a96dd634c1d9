import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { USERLANDS } from "../../test/sh-driver.js";
import { SandboxError } from "../errors/sandbox-error.js";
import { decodeBase64 } from "./e5-base64.js";
import { type EmulatedFileMethods, emulatedFiles } from "./e5-files.js";
import { createTestBed, type TestBed } from "./e5-test-context.js";
import { type EmulationContext, MAX_COMMAND_LINE_BYTES } from "./emulation-context.js";
import { shellQuote } from "./shell-quote.js";

const text = (b: Uint8Array) => new TextDecoder().decode(b);
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const call = () => ({ signal: AbortSignal.timeout(60_000) });
const ALL_BYTES = Uint8Array.from({ length: 256 }, (_, i) => i);
const MB20 = 20 * 1000 * 1000;

async function rejection(promise: Promise<unknown>): Promise<SandboxError> {
  try {
    await promise;
  } catch (error) {
    expect(SandboxError.isInstance(error)).toBe(true);
    return error as SandboxError;
  }
  throw new Error("expected a rejection");
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
  return chunks;
}

function streamOf(data: Uint8Array, piece: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= data.length) return controller.close();
      controller.enqueue(data.slice(at, at + piece));
      at += piece;
    },
  });
}

/** sha256 of a file computed inside the sandbox (second channel). */
async function sandboxSha(bed: TestBed, path: string): Promise<string | undefined> {
  const r = await bed.sh(`sha256sum ${shellQuote(path)}`);
  expect(r.exitCode).toBe(0);
  return text(r.stdout).split(" ")[0];
}

describe.each(USERLANDS)("E5 files over %s", (userland) => {
  let bed: TestBed;
  let files: EmulatedFileMethods;
  let p: (relative: string) => string;
  /** sha256 of a file computed inside the sandbox (second channel). */
  const sandboxSha = async (path: string) => {
    const r = await bed.sh(`sha256sum ${shellQuote(path)}`);
    expect(r.exitCode).toBe(0);
    return text(r.stdout).split(" ")[0];
  };

  beforeAll(async () => {
    bed = await createTestBed({ userland });
    files = emulatedFiles(bed.ctx);
    p = (relative) => `${bed.root}/${relative}`;
  });
  afterAll(() => bed.cleanup());

  it("writes text that cat reads back, and reads what the shell wrote", async () => {
    await files.doWriteFile(
      bed.sandbox,
      p("hello.txt"),
      new TextEncoder().encode("héllo\nwörld ✓\n"),
      call(),
    );
    expect(text((await bed.sh(`cat ${shellQuote(p("hello.txt"))}`)).stdout)).toBe("héllo\nwörld ✓\n");
    await bed.sh(`printf 'from the shell\\n' > ${shellQuote(p("shell.txt"))}`);
    expect(text(await files.doReadFile(bed.sandbox, p("shell.txt"), call()))).toBe("from the shell\n");
  });

  it("round-trips all 256 byte values, checked with od", async () => {
    await files.doWriteFile(bed.sandbox, p("bytes.bin"), ALL_BYTES, call());
    const od = await bed.sh(`od -An -v -tx1 ${shellQuote(p("bytes.bin"))}`);
    const hex = text(od.stdout).split(/\s+/).filter(Boolean);
    expect(hex).toEqual(Array.from(ALL_BYTES, (b) => b.toString(16).padStart(2, "0")));
    expect(await files.doReadFile(bed.sandbox, p("bytes.bin"), call())).toEqual(ALL_BYTES);
  });

  it("writes and reads an empty file", async () => {
    await files.doWriteFile(bed.sandbox, p("empty"), new Uint8Array(0), call());
    expect(text((await bed.sh(`wc -c < ${shellQuote(p("empty"))}`)).stdout).trim()).toBe("0");
    expect((await files.doReadFile(bed.sandbox, p("empty"), call())).length).toBe(0);
    const chunks = await collect(await files.doReadFileStream(bed.sandbox, p("empty"), call()));
    expect(chunks.length).toBe(0);
  });

  it("reads files that report size 0 but have content (/proc)", async () => {
    const data = text(await files.doReadFile(bed.sandbox, "/proc/self/status", call()));
    expect(data).toMatch(/^Name:/);
  });

  it("round-trips 20 MB of random bytes through stdin, with every command line under 64 KiB", async () => {
    const data = new Uint8Array(randomBytes(MB20));
    await files.doWriteFile(bed.sandbox, p("big.bin"), data, call());
    expect(await sandboxSha(p("big.bin"))).toBe(sha256(data));
    const back = await files.doReadFile(bed.sandbox, p("big.bin"), call());
    expect(back.length).toBe(MB20);
    expect(sha256(back)).toBe(sha256(data));
    expect(bed.provider.longestCommandBytes()).toBeLessThanOrEqual(MAX_COMMAND_LINE_BYTES);
  });

  it("streams a 20 MB file out in bounded chunks", async () => {
    await bed.sh(`head -c ${MB20} /dev/urandom > ${shellQuote(p("stream.bin"))}`);
    const chunks = await collect(await files.doReadFileStream(bed.sandbox, p("stream.bin"), call()));
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(8 * 1024 * 1024);
    const hash = createHash("sha256");
    let total = 0;
    for (const chunk of chunks) {
      hash.update(chunk);
      total += chunk.length;
    }
    expect(total).toBe(MB20);
    expect(hash.digest("hex")).toBe(await sandboxSha(p("stream.bin")));
  });

  it("writes from a ReadableStream of many small and large pieces", async () => {
    const data = new Uint8Array(randomBytes(9 * 1024 * 1024 + 17));
    await files.doWriteFileStream(bed.sandbox, p("streamed/in.bin"), streamOf(data, 100_003), call());
    expect(await sandboxSha(p("streamed/in.bin"))).toBe(sha256(data));
    await files.doWriteFileStream(bed.sandbox, p("streamed/empty"), streamOf(new Uint8Array(0), 1), call());
    expect((await files.doStat(bed.sandbox, p("streamed/empty"), call())).size).toBe(0);
  });

  it("rejects a stream that errors, leaving neither the file nor a temporary file", async () => {
    let sent = 0;
    const failing = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ > 100) controller.error(new Error("source broke"));
        else controller.enqueue(new Uint8Array(100_000));
      },
    });
    const error = await rejection(files.doWriteFileStream(bed.sandbox, p("broken/out.bin"), failing, call()));
    expect(error.message).toMatch(/source broke/);
    // Pieces may never have been sent (then not even the parent exists), or sent and cleaned up.
    const left = await bed.sh(`ls -A ${shellQuote(p("broken"))} 2>/dev/null; true`);
    expect(text(left.stdout)).toBe("");
  });

  const HOSTILE = [
    "with space",
    'it\'s "quoted"',
    "new\nline",
    "$(touch pwned)",
    "`touch pwned2`",
    "ünïcødé ✓ 日本",
    "-rf",
    "--help",
    "*",
    "back\\slash",
    "tab\there",
    ".hidden",
  ];

  it("round-trips hostile names, which list, stat and the shell see exactly", async () => {
    const dir = p("hostile");
    for (const name of HOSTILE) {
      await files.doWriteFile(bed.sandbox, `${dir}/${name}`, new TextEncoder().encode(name), call());
    }
    const listed = await files.doListFiles(bed.sandbox, dir, call());
    expect(listed.map((e) => e.name).sort()).toEqual([...HOSTILE].sort());
    for (const entry of listed) {
      expect(entry.path).toBe(`${dir}/${entry.name}`);
      expect(entry.type).toBe("file");
      expect(entry.size).toBe(new TextEncoder().encode(entry.name).length);
      expect(text(await files.doReadFile(bed.sandbox, entry.path, call()))).toBe(entry.name);
      const check = await bed.sh(`cat ${shellQuote(entry.path)}`);
      expect(text(check.stdout)).toBe(entry.name);
    }
    expect((await bed.sh(`ls ${shellQuote(bed.root)}`)).stdout).not.toContain("pwned");
    const info = await files.doStat(bed.sandbox, `${dir}/new\nline`, call());
    expect(info.name).toBe("new\nline");
  });

  it("treats relative names starting with - as files, relative to the working directory", async () => {
    await files.doWriteFile(bed.sandbox, "-n", new TextEncoder().encode("dash"), call());
    expect(text((await bed.sh("cat ./-n")).stdout)).toBe("dash");
    const info = await files.doStat(bed.sandbox, "-n", call());
    expect(info.path).toBe(p("-n"));
    const listed = await files.doListFiles(bed.sandbox, ".", call());
    expect(listed.find((e) => e.name === "-n")?.path).toBe(p("-n"));
    await files.doRename(bed.sandbox, "-n", "-e", call());
    await files.doRemove(bed.sandbox, "-e", { ...call(), recursive: false });
    expect((await bed.sh("ls -A")).stdout).not.toContain("-e");
  });

  it("creates nested parent directories", async () => {
    await files.doWriteFile(bed.sandbox, p("a/b/c/d.txt"), new TextEncoder().encode("deep"), call());
    expect(text((await bed.sh(`cat ${shellQuote(p("a/b/c/d.txt"))}`)).stdout)).toBe("deep");
  });

  it("lists types from mode bits, never following symlinks", async () => {
    const dir = p("types");
    await bed.sh(`mkdir -p ${dir}/sub && printf abc > ${dir}/file && ln -s file ${dir}/lfile && ln -s sub ${dir}/ldir \
&& ln -s nowhere ${dir}/dangling && mkfifo ${dir}/fifo`);
    const entries = await files.doListFiles(bed.sandbox, `${dir}/`, call());
    const byName = Object.fromEntries(entries.map((e) => [e.name, e]));
    expect(Object.keys(byName).sort()).toEqual(["dangling", "fifo", "file", "ldir", "lfile", "sub"]);
    expect(byName.file).toMatchObject({ type: "file", size: 3, path: `${dir}/file` });
    expect(byName.sub?.type).toBe("dir");
    expect(byName.lfile?.type).toBe("symlink");
    expect(byName.ldir?.type).toBe("symlink");
    expect(byName.dangling?.type).toBe("symlink");
    expect(byName.fifo?.type).toBe("other");
    expect(byName.file?.mtime).toBeInstanceOf(Date);
    expect(Math.abs(byName.file!.mtime!.getTime() - Date.now())).toBeLessThan(120_000);
    expect((await files.doStat(bed.sandbox, `${dir}/ldir`, call())).type).toBe("symlink");
    expect((await files.doStat(bed.sandbox, `${dir}/dangling`, call())).type).toBe("symlink");
    // Listing through a symlink to a directory lists the directory.
    expect(await files.doListFiles(bed.sandbox, `${dir}/ldir`, call())).toEqual([]);
    expect(await files.doListFiles(bed.sandbox, `${dir}/sub`, call())).toEqual([]);
  });

  it("stats files and directories with size, mode and mtime", async () => {
    await bed.sh(`printf 12345 > ${p("st")} && chmod 640 ${p("st")} && mkdir -p ${p("stdir")}`);
    const info = await files.doStat(bed.sandbox, p("st"), call());
    expect(info).toMatchObject({ name: "st", path: p("st"), type: "file", size: 5, mode: 0o640 });
    expect((await files.doStat(bed.sandbox, p("stdir"), call())).type).toBe("dir");
    expect((await files.doStat(bed.sandbox, "/", call())).type).toBe("dir");
  });

  it("applies mode when given and keeps the existing mode on overwrite", async () => {
    await files.doWriteFile(bed.sandbox, p("run.sh"), new TextEncoder().encode("echo ran\n"), {
      ...call(),
      mode: 0o750,
    });
    expect((await files.doStat(bed.sandbox, p("run.sh"), call())).mode).toBe(0o750);
    await files.doWriteFile(bed.sandbox, p("run.sh"), new TextEncoder().encode("echo again\n"), call());
    expect((await files.doStat(bed.sandbox, p("run.sh"), call())).mode).toBe(0o750);
    expect(text((await bed.sh(p("run.sh"))).stdout)).toBe("again\n");
    await expect(
      files.doWriteFile(bed.sandbox, p("bad"), new Uint8Array(1), { ...call(), mode: 0o10000 }),
    ).rejects.toMatchObject({ code: "Validation" });
  });

  it("writes through a symlink to the file it points at", async () => {
    await bed.sh(`printf old > ${p("target")} && ln -s target ${p("link")}`);
    await files.doWriteFile(bed.sandbox, p("link"), new TextEncoder().encode("new"), call());
    expect(text((await bed.sh(`cat ${p("target")}`)).stdout)).toBe("new");
    expect((await files.doStat(bed.sandbox, p("link"), call())).type).toBe("symlink");
  });

  it("reports NotFound for missing paths and other failures with their own codes", async () => {
    const missing = p("does/not/exist");
    for (const op of [
      () => files.doReadFile(bed.sandbox, missing, call()),
      () => files.doReadFileStream(bed.sandbox, missing, call()),
      () => files.doStat(bed.sandbox, missing, call()),
      () => files.doListFiles(bed.sandbox, missing, call()),
      () => files.doRemove(bed.sandbox, missing, { ...call(), recursive: true }),
      () => files.doRename(bed.sandbox, missing, p("x"), call()),
      () => files.doStat(bed.sandbox, `${p("hello.txt")}/below-a-file`, call()),
    ]) {
      expect((await rejection(op())).code).toBe("NotFound");
    }
    await bed.sh(`mkdir -p ${p("adir")}`);
    expect((await rejection(files.doReadFile(bed.sandbox, p("adir"), call()))).code).toBe("Validation");
    const onDir = await rejection(files.doWriteFile(bed.sandbox, p("adir"), new Uint8Array(1), call()));
    expect(onDir.code).toBe("Validation");
    expect(onDir.message).toMatch(/directory/);
    expect((await rejection(files.doListFiles(bed.sandbox, p("hello.txt"), call()))).code).toBe("Validation");
    expect((await rejection(files.doReadFile(bed.sandbox, "/dev/null", call()))).code).toBe("Validation");
    const underFile = await rejection(
      files.doWriteFile(bed.sandbox, `${p("hello.txt")}/child`, new Uint8Array(1), call()),
    );
    expect(underFile.code).toBe("Validation");
    // A dangling symlink is a path that exists.
    await bed.sh(`ln -s nowhere ${p("dangle")}`);
    expect((await files.doStat(bed.sandbox, p("dangle"), call())).type).toBe("symlink");
    expect((await rejection(files.doReadFile(bed.sandbox, p("dangle"), call()))).code).toBe("NotFound");
  });

  it("rejects empty paths and NUL before running anything", async () => {
    for (const bad of ["", "a\0b"]) {
      expect((await rejection(files.doStat(bed.sandbox, bad, call()))).code).toBe("Validation");
      expect((await rejection(files.doWriteFile(bed.sandbox, bad, new Uint8Array(1), call()))).code).toBe(
        "Validation",
      );
    }
  });

  it("removes files, empty dirs, and trees only when recursive", async () => {
    await bed.sh(`mkdir -p ${p("rm/tree/deep")} ${p("rm/empty")} ${p("rm/kept")} && printf x > ${p("rm/tree/deep/f")} \
&& printf y > ${p("rm/file")} && ln -s kept ${p("rm/link")} && printf z > ${p("rm/kept/inside")}`);
    await files.doRemove(bed.sandbox, p("rm/file"), { ...call(), recursive: false });
    await files.doRemove(bed.sandbox, p("rm/empty"), { ...call(), recursive: false });
    const notEmpty = await rejection(
      files.doRemove(bed.sandbox, p("rm/tree"), { ...call(), recursive: false }),
    );
    expect(notEmpty.code).toBe("Conflict");
    expect(notEmpty.message).toMatch(/not empty/);
    await files.doRemove(bed.sandbox, p("rm/tree"), { ...call(), recursive: true });
    await files.doRemove(bed.sandbox, p("rm/link"), { ...call(), recursive: true });
    expect(text((await bed.sh(`ls -A ${p("rm")}`)).stdout).trim()).toBe("kept");
    expect(text((await bed.sh(`cat ${p("rm/kept/inside")}`)).stdout)).toBe("z");
  });

  it("renames files and directories with rename semantics", async () => {
    await bed.sh(
      `mkdir -p ${p("mv/dir")} ${p("mv/other")} && printf 1 > ${p("mv/a")} && printf 2 > ${p("mv/b")}`,
    );
    await files.doRename(bed.sandbox, p("mv/a"), p("mv/b"), call());
    expect(text((await bed.sh(`cat ${p("mv/b")}; ls ${p("mv")}`)).stdout)).toBe("1b\ndir\nother\n");
    await files.doRename(bed.sandbox, p("mv/dir"), p("mv/renamed dir"), call());
    expect((await files.doStat(bed.sandbox, p("mv/renamed dir"), call())).type).toBe("dir");
    expect((await rejection(files.doRename(bed.sandbox, p("mv/b"), p("mv/other"), call()))).code).toBe(
      "Conflict",
    );
    expect((await rejection(files.doRename(bed.sandbox, p("mv/b"), p("mv/nope/b"), call()))).code).toBe(
      "NotFound",
    );
    await files.doRename(bed.sandbox, p("mv/b"), p("mv/b"), call());
    expect(text((await bed.sh(`cat ${p("mv/b")}`)).stdout)).toBe("1");
  });

  it("makes directories, recursively or not", async () => {
    await files.doMkdir(bed.sandbox, p("mk/x/y/z"), { ...call(), recursive: true });
    await files.doMkdir(bed.sandbox, p("mk/x/y/z"), { ...call(), recursive: true });
    expect((await bed.sh(`[ -d ${p("mk/x/y/z")} ]`)).exitCode).toBe(0);
    await files.doMkdir(bed.sandbox, p("mk/single"), { ...call(), recursive: false });
    expect(
      (await rejection(files.doMkdir(bed.sandbox, p("mk/single"), { ...call(), recursive: false }))).code,
    ).toBe("Conflict");
    expect(
      (await rejection(files.doMkdir(bed.sandbox, p("mk/no/parent"), { ...call(), recursive: false }))).code,
    ).toBe("NotFound");
    await bed.sh(`printf f > ${p("mk/file")}`);
    expect(
      (await rejection(files.doMkdir(bed.sandbox, p("mk/file"), { ...call(), recursive: true }))).code,
    ).toBe("Conflict");
    expect(
      (await rejection(files.doMkdir(bed.sandbox, p("mk/file/sub"), { ...call(), recursive: true }))).code,
    ).toBe("Validation");
  });
});

describe.each(USERLANDS)("E5 files over %s without stdin", (userland) => {
  let bed: TestBed;
  let files: EmulatedFileMethods;

  beforeAll(async () => {
    bed = await createTestBed({ userland, stdin: false, textOutput: true });
    files = emulatedFiles(bed.ctx);
  });
  afterAll(() => bed.cleanup());

  it("writes 20 MB with base64 chunks on the command line, none over 64 KiB", async () => {
    const data = new Uint8Array(randomBytes(MB20));
    const path = `${bed.root}/${"long-name-".repeat(20)}/big.bin`;
    await files.doWriteFile(bed.sandbox, path, data, call());
    const sum = await bed.sh(`sha256sum ${shellQuote(path)}`);
    expect(text(sum.stdout).split(" ")[0]).toBe(sha256(data));
    expect(bed.provider.longestCommandBytes()).toBeLessThanOrEqual(MAX_COMMAND_LINE_BYTES);
    expect(bed.provider.longestCommandBytes()).toBeGreaterThan(40 * 1024);
    const back = await files.doReadFile(bed.sandbox, path, call());
    expect(sha256(back)).toBe(sha256(data));
  });

  it("round-trips all byte values and an empty file", async () => {
    await files.doWriteFile(bed.sandbox, `${bed.root}/all.bin`, ALL_BYTES, call());
    const viaShell = await bed.sh(`base64 ${bed.root}/all.bin`);
    expect(decodeBase64(viaShell.stdout)).toEqual(ALL_BYTES);
    await files.doWriteFile(bed.sandbox, `${bed.root}/zero`, new Uint8Array(0), call());
    expect((await files.doReadFile(bed.sandbox, `${bed.root}/zero`, call())).length).toBe(0);
  });

  it("leaves no partial file when aborted mid-way", async () => {
    const controller = new AbortController();
    const data = new Uint8Array(randomBytes(5 * 1024 * 1024));
    const source = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(data);
        c.close();
      },
    });
    setTimeout(() => controller.abort(), 150);
    const error = await rejection(
      files.doWriteFileStream(bed.sandbox, `${bed.root}/aborted/out.bin`, source, {
        signal: controller.signal,
      }),
    );
    expect(error.code).toBe("Aborted");
    const left = await bed.sh(`ls -A ${bed.root}/aborted`);
    expect(left.exitCode).toBe(0);
    expect(text(left.stdout)).toBe("");
  });
});

/** The context with its exec counted: calls, and most calls in flight at once. */
function counted(ctx: EmulationContext): { ctx: EmulationContext; calls: number; mostInFlight: number } {
  const counts = { ctx, calls: 0, mostInFlight: 0 };
  let inFlight = 0;
  counts.ctx = {
    ...ctx,
    exec: async (sandbox, script, options) => {
      counts.calls++;
      inFlight++;
      counts.mostInFlight = Math.max(counts.mostInFlight, inFlight);
      try {
        return await ctx.exec(sandbox, script, options);
      } finally {
        inFlight--;
      }
    },
  };
  return counts;
}

describe.each(USERLANDS)("E5 transfers over %s: pieces by transport", (userland) => {
  const beds: TestBed[] = [];
  afterAll(async () => {
    for (const bed of beds) await bed.cleanup();
  });
  const bedWith = async (options: { stdin: boolean | "text"; textOutput: boolean }) => {
    const bed = await createTestBed({ userland, ...options });
    beds.push(bed);
    return bed;
  };

  it("over raw stdin and stdout, 20 MB take one exec each way", async () => {
    const bed = await bedWith({ stdin: true, textOutput: false });
    const data = new Uint8Array(randomBytes(MB20));
    const count = counted(bed.ctx);
    const files = emulatedFiles(count.ctx);
    // One exec learns that stdout carries raw bytes.
    await files.doStat(bed.sandbox, bed.root, call());
    count.calls = 0;
    await files.doWriteFile(bed.sandbox, `${bed.root}/raw.bin`, data, call());
    expect(count.calls).toBe(1);
    count.calls = 0;
    expect(sha256(await files.doReadFile(bed.sandbox, `${bed.root}/raw.bin`, call()))).toBe(sha256(data));
    expect(count.calls).toBe(1);
  });

  it("over a text-only exec (UTF-8 stdin and stdout), binary data moves as base64, pieces in flight", async () => {
    const bed = await bedWith({ stdin: "text", textOutput: true });
    const data = new Uint8Array(randomBytes(MB20));
    data.set(ALL_BYTES, 0);
    const count = counted(bed.ctx);
    const files = emulatedFiles(count.ctx);
    await files.doWriteFile(bed.sandbox, `${bed.root}/text.bin`, data, call());
    expect(await sandboxSha(bed, `${bed.root}/text.bin`)).toBe(sha256(data));
    expect(count.mostInFlight).toBeGreaterThan(1);
    expect(count.mostInFlight).toBeLessThanOrEqual(4);
    // Data went on stdin, so the command lines stayed short.
    expect(bed.provider.longestCommandBytes()).toBeLessThan(8 * 1024);
    count.mostInFlight = 0;
    expect(sha256(await files.doReadFile(bed.sandbox, `${bed.root}/text.bin`, call()))).toBe(sha256(data));
    expect(count.mostInFlight).toBeGreaterThan(1);
    expect(count.mostInFlight).toBeLessThanOrEqual(4);
    const streamed = Buffer.concat(
      await collect(await files.doReadFileStream(bed.sandbox, `${bed.root}/text.bin`, call())),
    );
    expect(sha256(streamed)).toBe(sha256(data));
    await files.doWriteFileStream(bed.sandbox, `${bed.root}/stream.bin`, streamOf(data, 1_000_003), call());
    expect(await sandboxSha(bed, `${bed.root}/stream.bin`)).toBe(sha256(data));
  });

  it("a file that shrinks or grows between pieces is read up to where the pieces end, no error", async () => {
    const bed = await bedWith({ stdin: "text", textOutput: true });
    const files = emulatedFiles(bed.ctx);
    const path = `${bed.root}/changing.bin`;
    await files.doWriteFile(bed.sandbox, path, new Uint8Array(randomBytes(9 * 1024 * 1024)), call());
    const stream = await files.doReadFileStream(bed.sandbox, path, call());
    const reader = stream.getReader();
    const first = await reader.read();
    expect(first.value?.length).toBe(4 * 1024 * 1024);
    await bed.sh(`head -c 5000000 /dev/zero > ${shellQuote(path)}`);
    let rest = 0;
    for (let next = await reader.read(); !next.done; next = await reader.read()) rest += next.value.length;
    // The pieces read ahead may have seen the old content; what comes after the shrink is cut short.
    expect(first.value!.length + rest).toBeLessThanOrEqual(9 * 1024 * 1024);
  });
});

describe.each(USERLANDS)(
  "E5 files over %s through the E1/E2 normalization, without stdin or exit codes",
  (userland) => {
    let bed: TestBed;
    let files: EmulatedFileMethods;

    beforeAll(async () => {
      bed = await createTestBed({ userland, stdin: false, exitCodes: false, normalized: true });
      files = emulatedFiles(bed.ctx);
    });
    afterAll(() => bed.cleanup());

    it("keeps every wrapped command line under 64 KiB and recovers the distinctive exit codes", async () => {
      const data = new Uint8Array(randomBytes(1024 * 1024));
      const path = `${bed.root}/it's here/data.bin`;
      await files.doWriteFile(bed.sandbox, path, data, call());
      expect(sha256(await files.doReadFile(bed.sandbox, path, call()))).toBe(sha256(data));
      expect(bed.provider.longestCommandBytes()).toBeLessThanOrEqual(MAX_COMMAND_LINE_BYTES);
      expect((await rejection(files.doStat(bed.sandbox, `${bed.root}/missing`, call()))).code).toBe(
        "NotFound",
      );
      expect((await rejection(files.doReadFile(bed.sandbox, bed.root, call()))).code).toBe("Validation");
    });
  },
);
