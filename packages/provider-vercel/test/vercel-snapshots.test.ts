/**
 * What the kit's snapshot, fork and streamed-file cases do not pin down about Vercel's own semantics,
 * through the emulator: a snapshot is named as asked and the sandbox runs on from it; restoring an unknown
 * or deleted snapshot is NotFound and stops nothing; forks copy the parent's metadata but not the
 * idempotency key of its create; a streamed write larger than one upload arrives whole with its mode, onto
 * an awkward path, and a stream that fails midway leaves the target as it was and no upload behind.
 */
import { createHash } from "node:crypto";
import { createSandboxClient, IDEMPOTENCY_KEY_METADATA_KEY } from "@sbox/core";
import { afterAll, expect, test } from "vitest";
import { startTestEmulator, testProvider } from "./vercel-test-env.js";

const emulator = await startTestEmulator();
const client = createSandboxClient({ provider: testProvider(emulator) });
afterAll(async () => {
  await client.dispose();
  await emulator.close();
});

const MIB = 1 << 20;

function bytesOf(size: number): Uint8Array {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = (i * 7 + (i >> 12)) & 0xff;
  return out;
}

function streamOf(bytes: Uint8Array, chunk: number, failAfter?: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (failAfter !== undefined && at >= failAfter) {
        controller.error(new Error("the source broke"));
        return;
      }
      if (at >= bytes.length) {
        controller.close();
        return;
      }
      controller.enqueue(bytes.slice(at, at + chunk));
      at += chunk;
    },
  });
}

const sha = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");

test("a snapshot keeps its name and the sandbox runs on from it; an unknown or deleted one is NotFound and stops nothing", async () => {
  const sandbox = await client.create();
  try {
    await sandbox.files.write("kept.txt", "v1");
    const ref = await sandbox.snapshots.create({ name: "before-change" });
    expect(ref.name).toBe("before-change");
    expect((await sandbox.getInfo()).state).toBe("running");
    expect(await sandbox.files.readText("kept.txt")).toBe("v1");
    await sandbox.files.write("kept.txt", "v2");
    await expect(
      sandbox.snapshots.restore({ id: "snap_does_not_exist", createdAt: new Date() }),
    ).rejects.toMatchObject({ code: "NotFound" });
    await sandbox.snapshots.delete(ref);
    await expect(sandbox.snapshots.restore(ref)).rejects.toMatchObject({ code: "NotFound" });
    await expect(sandbox.snapshots.delete(ref)).rejects.toMatchObject({ code: "NotFound" });
    // Nothing was stopped or rolled back by the refused calls.
    expect((await sandbox.getInfo()).state).toBe("running");
    expect(await sandbox.files.readText("kept.txt")).toBe("v2");
  } finally {
    await sandbox.destroy();
  }
});

test("forks copy the parent's metadata, not its create's idempotency key, and the parent runs on", async () => {
  const parent = await client.create({ metadata: { team: "blue" }, idempotencyKey: "vercel-fork-key" });
  const forks = await parent.fork({ count: 2 });
  try {
    expect(forks).toHaveLength(2);
    for (const fork of forks) {
      const info = await fork.getInfo();
      expect(info.state).toBe("running");
      expect(info.metadata.team).toBe("blue");
      expect(info.metadata[IDEMPOTENCY_KEY_METADATA_KEY]).toBeUndefined();
    }
    expect((await parent.getInfo()).metadata[IDEMPOTENCY_KEY_METADATA_KEY]).toBe("vercel-fork-key");
    expect((await parent.getInfo()).state).toBe("running");
  } finally {
    await Promise.allSettled([...forks, parent].map((s) => s.destroy()));
  }
});

test("a streamed write of several uploads arrives whole with its mode, onto a path with quotes, spaces and a newline", async () => {
  const sandbox = await client.create();
  try {
    const bytes = bytesOf(17 * MIB + 123);
    const path = `/tmp/it's a "file" $(x)\nname.bin`;
    await sandbox.files.write(path, streamOf(bytes, 300_000), { mode: 0o750 });
    const back = await sandbox.files.read(path);
    expect(back.length).toBe(bytes.length);
    expect(sha(back)).toBe(sha(bytes));
    const mode = await sandbox.commands.run(["stat", "-c", "%a", path]);
    expect(mode.stdout.trim()).toBe("750");
    // Nothing of the upload is left next to it.
    const left = await sandbox.commands.run(["sh", "-c", "ls -A /tmp | grep -c sbox-upload || true"]);
    expect(left.stdout.trim()).toBe("0");
  } finally {
    await sandbox.destroy();
  }
});

test("a stream that fails after some uploads leaves the target as it was and no upload behind", async () => {
  const sandbox = await client.create();
  try {
    await sandbox.files.write("target.bin", "original");
    const bytes = bytesOf(20 * MIB);
    await expect(sandbox.files.write("target.bin", streamOf(bytes, MIB, 17 * MIB))).rejects.toThrow();
    expect(await sandbox.files.readText("target.bin")).toBe("original");
    const left = await sandbox.commands.run(["sh", "-c", "ls -A | grep -c sbox-upload || true"]);
    expect(left.stdout.trim()).toBe("0");
    // Writing onto a directory is refused, never written into.
    await sandbox.commands.run(["mkdir", "-p", "adir"]);
    await expect(sandbox.files.write("adir", streamOf(bytes, MIB))).rejects.toMatchObject({
      code: "Validation",
    });
    expect((await sandbox.commands.run(["sh", "-c", "ls -A adir | wc -l"])).stdout.trim()).toBe("0");
  } finally {
    await sandbox.destroy();
  }
});
