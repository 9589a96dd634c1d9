/**
 * `files.writeMany` writes many files in one call, streams included, produced lazily or given as an
 * array; bad input writes nothing; a failure names the file and what was written before it. Checked
 * through a second channel (a command reading the files back) on real shells.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { shDriver, USERLANDS } from "../../test/sh-driver.js";
import { createSandboxClient } from "../client/create-sandbox-client.js";
import { SandboxError } from "../errors/sandbox-error.js";
import type { FileToWrite, Sandbox } from "./sandbox-types.js";

function streamOf(chunks: readonly Uint8Array[]): ReadableStream<Uint8Array> {
  let index = 0;
  return new ReadableStream({
    pull(controller) {
      if (index < chunks.length) controller.enqueue(chunks[index++]!);
      else controller.close();
    },
  });
}

async function rejection(promise: Promise<unknown>): Promise<SandboxError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!SandboxError.isInstance(error)) throw new Error(`expected a SandboxError, got ${String(error)}`);
  return error;
}

describe.each(USERLANDS)("files.writeMany over a bare %s exec", (userland) => {
  const provider = shDriver({ userland });
  const client = createSandboxClient({ provider });
  let sandbox: Sandbox;
  let dir = "";
  beforeAll(async () => {
    sandbox = await client.create();
    dir = (await sandbox.commands.run("pwd")).stdout.trim();
  });
  afterAll(async () => {
    await sandbox.destroy();
    provider.cleanup();
  });

  test("an array of text, bytes and a stream lands, nested directories created, modes kept", async () => {
    const allBytes = new Uint8Array(256).map((_, index) => index);
    await sandbox.files.writeMany([
      { path: `${dir}/many/a.txt`, data: "alpha\n" },
      { path: `${dir}/many/deep/er/b.bin`, data: allBytes },
      {
        path: `${dir}/many/c.txt`,
        data: streamOf([new TextEncoder().encode("gam"), new TextEncoder().encode("ma")]),
      },
      { path: `${dir}/many/run.sh`, data: "#!/bin/sh\necho ran\n", mode: 0o755 },
    ]);
    const check = await sandbox.commands.run(
      `cd ${dir}/many && cat a.txt c.txt && echo && wc -c < deep/er/b.bin && ./run.sh`,
    );
    expect(check.stdout.replace(/^\s+/gm, "")).toBe("alpha\ngamma\n256\nran\n");
  });

  test("entries produced lazily by an async generator, one at a time", async () => {
    let produced = 0;
    async function* files(): AsyncGenerator<FileToWrite> {
      for (let index = 0; index < 20; index += 1) {
        produced += 1;
        yield { path: `${dir}/lazy/file-${index}.txt`, data: `${index}\n` };
      }
    }
    await sandbox.files.writeMany(files());
    expect(produced).toBe(20);
    const count = await sandbox.commands.run(`cat ${dir}/lazy/*.txt | wc -l`);
    expect(count.stdout.trim()).toBe("20");
  });

  test("a bad entry anywhere in an array writes nothing; a duplicate path is refused", async () => {
    const bad = await rejection(
      sandbox.files.writeMany([
        { path: `${dir}/none/first.txt`, data: "x" },
        { path: "", data: "y" },
      ] as FileToWrite[]),
    );
    expect(bad.code).toBe("Validation");
    expect(await sandbox.files.exists(`${dir}/none/first.txt`)).toBe(false);
    const twice = await rejection(
      sandbox.files.writeMany([
        { path: `${dir}/twice.txt`, data: "1" },
        { path: `${dir}/twice.txt`, data: "2" },
      ]),
    );
    expect(twice.message).toMatch(/given twice/);
    expect((await rejection(sandbox.files.writeMany("nope" as never))).code).toBe("Validation");
  });

  test("a failed write names the file and keeps its code; the files before it are written", async () => {
    await sandbox.files.write(`${dir}/blocker`, "a file where a directory should be");
    const error = await rejection(
      sandbox.files.writeMany([
        { path: `${dir}/ok-before.txt`, data: "kept" },
        { path: `${dir}/blocker/child.txt`, data: "cannot" },
        { path: `${dir}/never.txt`, data: "not reached" },
      ]),
    );
    expect(error.message).toMatch(/writing .*blocker\/child\.txt failed after 1 file were written/);
    expect(await sandbox.files.readText(`${dir}/ok-before.txt`)).toBe("kept");
    expect(await sandbox.files.exists(`${dir}/never.txt`)).toBe(false);
  });
});
