import { createHash } from "node:crypto";
import { createSandboxClient } from "@sbox/core";
import type { DriverSandbox } from "@sbox/core/spec";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { DockerSandboxNative } from "../src/index.js";
import { docker } from "../src/index.js";
import {
  call,
  ENGINE,
  ensureTestImage,
  RUN_ID,
  RUN_LABEL,
  removeLeftovers,
  SKIP_NOTE,
  TEST_IMAGE,
  text,
} from "./docker-test-env.js";

const provider = docker({ image: TEST_IMAGE, labels: { [RUN_LABEL]: RUN_ID } });

async function sh(s: DriverSandbox<DockerSandboxNative>, script: string, ...args: string[]) {
  const result = await provider.doExec(s, {
    command: { argv: ["sh", "-c", script, "sh", ...args] },
    ...call(),
  });
  return { stdout: text(result.stdout), stderr: text(result.stderr), exitCode: result.exitCode };
}

function pattern(size: number): Uint8Array {
  const data = new Uint8Array(size);
  for (let i = 0; i < size; i++) data[i] = (i * 7 + (i >> 10)) & 0xff;
  return data;
}

function md5(data: Uint8Array): string {
  return createHash("md5").update(data).digest("hex");
}

describe.skipIf(!ENGINE.ok)(`docker files${SKIP_NOTE}`, () => {
  let sandbox: DriverSandbox<DockerSandboxNative>;

  beforeAll(async () => {
    ensureTestImage();
    sandbox = await provider.doCreate({}, call());
  });

  afterAll(async () => {
    if (sandbox) await provider.doDestroy(sandbox, call());
    expect(await removeLeftovers()).toBe(0);
  });

  test("all 256 byte values round-trip, checked through exec", async () => {
    const bytes = new Uint8Array(256).map((_, i) => i);
    await provider.doWriteFile!(sandbox, "/tmp/bytes.bin", bytes, call());
    expect(Buffer.from(await provider.doReadFile!(sandbox, "/tmp/bytes.bin", call()))).toEqual(
      Buffer.from(bytes),
    );
    expect((await sh(sandbox, "md5sum /tmp/bytes.bin")).stdout.split(" ")[0]).toBe(md5(bytes));
  });

  test("an empty file", async () => {
    await provider.doWriteFile!(sandbox, "/tmp/empty", new Uint8Array(0), call());
    expect((await provider.doReadFile!(sandbox, "/tmp/empty", call())).length).toBe(0);
    expect((await provider.doStat!(sandbox, "/tmp/empty", call())).size).toBe(0);
  });

  test("a file written by exec reads back the same (second channel)", async () => {
    await sh(sandbox, "printf 'line1\\nline2 ✓' > /tmp/from-exec");
    expect(text(await provider.doReadFile!(sandbox, "/tmp/from-exec", call()))).toBe("line1\nline2 ✓");
  });

  test("missing parent directories are created", async () => {
    await provider.doWriteFile!(sandbox, "/tmp/a/b/c/deep.txt", Buffer.from("deep"), call());
    expect((await sh(sandbox, "cat /tmp/a/b/c/deep.txt")).stdout).toBe("deep");
  });

  test("names with spaces, quotes, newlines and unicode", async () => {
    const names = ["with space", "quote'single", 'quote"double', "new\nline", "ünï ✓ 日本", "$(id)", "-dash"];
    for (const name of names) {
      const path = `/tmp/names/${name}`;
      await provider.doWriteFile!(sandbox, path, Buffer.from(name), call());
      expect(text(await provider.doReadFile!(sandbox, path, call()))).toBe(name);
      expect((await sh(sandbox, 'cat "$1"', path)).stdout).toBe(name);
    }
  });

  test("a name longer than 100 bytes (PAX header)", async () => {
    const path = `/tmp/${"long-directory-name/".repeat(8)}${"f".repeat(150)}`;
    await provider.doWriteFile!(sandbox, path, Buffer.from("long"), call());
    expect((await sh(sandbox, 'cat "$1"', path)).stdout).toBe("long");
  });

  test("modes: set explicitly, kept on overwrite when not given", async () => {
    await provider.doWriteFile!(sandbox, "/tmp/script.sh", Buffer.from("#!/bin/sh\necho ran\n"), {
      ...call(),
      mode: 0o750,
    });
    expect((await sh(sandbox, "/tmp/script.sh")).stdout).toBe("ran\n");
    await provider.doWriteFile!(sandbox, "/tmp/script.sh", Buffer.from("#!/bin/sh\necho again\n"), call());
    expect((await provider.doStat!(sandbox, "/tmp/script.sh", call())).mode).toBe(0o750);
    expect((await sh(sandbox, "/tmp/script.sh")).stdout).toBe("again\n");
  });

  test("stat reports files, directories and symlinks as such (links not followed)", async () => {
    await sh(sandbox, "mkdir -p /tmp/st && echo hi > /tmp/st/f && ln -sf f /tmp/st/link");
    const file = await provider.doStat!(sandbox, "/tmp/st/f", call());
    expect(file).toMatchObject({ name: "f", path: "/tmp/st/f", type: "file", size: 3 });
    expect(file.mtime).toBeInstanceOf(Date);
    expect(await provider.doStat!(sandbox, "/tmp/st", call())).toMatchObject({ type: "dir" });
    expect(await provider.doStat!(sandbox, "/tmp/st/link", call())).toMatchObject({ type: "symlink" });
  });

  test("reading a symlink reads its target; a relative path resolves against the workdir", async () => {
    expect(text(await provider.doReadFile!(sandbox, "/tmp/st/link", call()))).toBe("hi\n");
    await sh(sandbox, "echo rel > relative.txt");
    // Driver methods receive absolute paths: the core resolves relative ones before it calls the driver.
    const facade = await createSandboxClient({ provider }).connect(sandbox.id);
    expect(text(await facade.files.read("relative.txt"))).toBe("rel\n");
  });

  test("NotFound for missing paths, Validation for directories", async () => {
    await expect(provider.doReadFile!(sandbox, "/tmp/missing", call())).rejects.toMatchObject({
      code: "NotFound",
    });
    await expect(provider.doStat!(sandbox, "/tmp/missing", call())).rejects.toMatchObject({
      code: "NotFound",
    });
    await expect(provider.doStat!(sandbox, "/etc/passwd/below", call())).rejects.toMatchObject({
      code: "NotFound",
    });
    await expect(provider.doReadFile!(sandbox, "/tmp", call())).rejects.toMatchObject({ code: "Validation" });
    await expect(provider.doWriteFile!(sandbox, "/tmp", Buffer.from("x"), call())).rejects.toMatchObject({
      code: "Validation",
    });
    // The directory was not replaced by a file.
    expect((await sh(sandbox, "test -d /tmp && echo dir")).stdout).toBe("dir\n");
    // ENOTDIR, as the core maps it.
    await expect(
      provider.doWriteFile!(sandbox, "/etc/passwd/below", Buffer.from("x"), call()),
    ).rejects.toMatchObject({
      code: "Validation",
    });
  });

  test("20 MB round-trip through the buffered methods", async () => {
    const data = pattern(20 * 1024 * 1024);
    await provider.doWriteFile!(sandbox, "/tmp/big.bin", data, call());
    expect((await sh(sandbox, "md5sum /tmp/big.bin")).stdout.split(" ")[0]).toBe(md5(data));
    expect(md5(await provider.doReadFile!(sandbox, "/tmp/big.bin", call()))).toBe(md5(data));
  });

  test("streams both ways: 40 MB generated on the fly, never held whole", async () => {
    const total = 40 * 1024 * 1024;
    const chunk = pattern(256 * 1024);
    const hash = createHash("md5");
    let sent = 0;
    const upload = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= total) return controller.close();
        hash.update(chunk);
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    await provider.doWriteFileStream!(sandbox, "/tmp/stream/out.bin", upload, { ...call(), mode: 0o600 });
    const expected = hash.digest("hex");
    expect((await sh(sandbox, "md5sum /tmp/stream/out.bin")).stdout.split(" ")[0]).toBe(expected);
    expect((await provider.doStat!(sandbox, "/tmp/stream/out.bin", call())).mode).toBe(0o600);

    const download = await provider.doReadFileStream!(sandbox, "/tmp/stream/out.bin", call());
    const back = createHash("md5");
    let received = 0;
    let chunks = 0;
    for await (const piece of download as unknown as AsyncIterable<Uint8Array>) {
      back.update(piece);
      received += piece.length;
      chunks++;
    }
    expect(received).toBe(total);
    expect(chunks).toBeGreaterThan(1);
    expect(back.digest("hex")).toBe(expected);
  });

  test("a stream write into a directory fails with a coded error", async () => {
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(Buffer.from("x"));
        controller.close();
      },
    });
    await expect(provider.doWriteFileStream!(sandbox, "/tmp", stream, call())).rejects.toMatchObject({
      code: "Validation",
    });
  });
});
