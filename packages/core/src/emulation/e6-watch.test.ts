import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { USERLANDS } from "../../test/sh-driver.js";
import type { WatchEvent } from "../spec/files-types.js";
import { emulatedFiles } from "./e5-files.js";
import { createTestBed, type TestBed } from "./e5-test-context.js";
import { emulatedWatch } from "./e6-watch.js";
import type { EmulationContext } from "./emulation-context.js";

const call = () => AbortSignal.timeout(60_000);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(events: WatchEvent[], wanted: WatchEvent, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (events.some((e) => e.type === wanted.type && e.path === wanted.path)) return;
    await sleep(20);
  }
  throw new Error(`no ${wanted.type} event for ${wanted.path}; saw ${JSON.stringify(events)}`);
}

describe.each(USERLANDS)("E6 watch over %s", (userland) => {
  let bed: TestBed;
  let watch: ReturnType<typeof emulatedWatch>;
  let p: (relative: string) => string;

  beforeAll(async () => {
    bed = await createTestBed({ userland });
    watch = emulatedWatch(bed.ctx, emulatedFiles(bed.ctx), { intervalMs: 40 });
    p = (relative) => `${bed.root}/${relative}`;
  });
  afterAll(() => bed.cleanup());

  it("reports create, same-size modify and delete of direct children with absolute paths", async () => {
    await bed.sh(`mkdir -p ${p("w1/sub")}`);
    const events: WatchEvent[] = [];
    const watcher = await watch(bed.sandbox, p("w1"), {
      signal: call(),
      recursive: false,
      onEvent: (e) => events.push(e),
    });
    try {
      await bed.sh(`printf aaaa > ${p("w1/f.txt")}`);
      await until(events, { type: "create", path: p("w1/f.txt") });
      // Same size, very likely within the same mtime second: detected through the nanosecond mtime.
      await bed.sh(`printf bbbb > ${p("w1/f.txt")}`);
      await until(events, { type: "modify", path: p("w1/f.txt") });
      await bed.sh(`printf x > ${p("w1/sub/deep")}`);
      await bed.sh(`rm ${p("w1/f.txt")}`);
      await until(events, { type: "delete", path: p("w1/f.txt") });
      // Not recursive: nothing below the subdirectory is reported.
      expect(events.some((e) => e.path.includes("deep"))).toBe(false);
    } finally {
      await watcher.close();
    }
  });

  it("reports changes anywhere in the tree when recursive", async () => {
    await bed.sh(`mkdir -p ${p("w2/a")}`);
    const events: WatchEvent[] = [];
    const watcher = await watch(bed.sandbox, p("w2"), {
      signal: call(),
      recursive: true,
      onEvent: (e) => events.push(e),
    });
    try {
      await bed.sh(`mkdir -p ${p("w2/a/b")} && printf 1 > '${p("w2/a/b/new file\nline")}'`);
      await until(events, { type: "create", path: p("w2/a/b") });
      await until(events, { type: "create", path: p("w2/a/b/new file\nline") });
      await bed.sh(`printf 22 >> '${p("w2/a/b/new file\nline")}'`);
      await until(events, { type: "modify", path: p("w2/a/b/new file\nline") });
      await bed.sh(`rm -r ${p("w2/a")}`);
      await until(events, { type: "delete", path: p("w2/a/b/new file\nline") });
      await until(events, { type: "delete", path: p("w2/a") });
    } finally {
      await watcher.close();
    }
  });

  it("watches a single file", async () => {
    await bed.sh(`printf one > ${p("single")}`);
    const events: WatchEvent[] = [];
    const watcher = await watch(bed.sandbox, p("single"), {
      signal: call(),
      recursive: false,
      onEvent: (e) => events.push(e),
    });
    try {
      await bed.sh(`printf two > ${p("single")}`);
      await until(events, { type: "modify", path: p("single") });
      await bed.sh(`rm ${p("single")}`);
      await until(events, { type: "delete", path: p("single") });
      await bed.sh(`printf three > ${p("single")}`);
      await until(events, { type: "create", path: p("single") });
    } finally {
      await watcher.close();
    }
  });

  it("stops after close() and after its signal aborts", async () => {
    await bed.sh(`mkdir -p ${p("w3")}`);
    const events: WatchEvent[] = [];
    const watcher = await watch(bed.sandbox, p("w3"), {
      signal: call(),
      recursive: true,
      onEvent: (e) => events.push(e),
    });
    await bed.sh(`printf 1 > ${p("w3/before")}`);
    await until(events, { type: "create", path: p("w3/before") });
    await watcher.close();
    await bed.sh(`printf 1 > ${p("w3/after")}`);
    await sleep(300);
    expect(events.map((e) => e.path)).toEqual([p("w3/before")]);

    const controller = new AbortController();
    const aborted: WatchEvent[] = [];
    const second = await watch(bed.sandbox, p("w3"), {
      signal: controller.signal,
      recursive: true,
      onEvent: (e) => aborted.push(e),
    });
    controller.abort();
    await bed.sh(`printf 1 > ${p("w3/after-abort")}`);
    await sleep(300);
    expect(aborted).toEqual([]);
    await second.close();
  });

  it("rejects with NotFound when the path does not exist", async () => {
    await expect(
      watch(bed.sandbox, p("nope"), { signal: call(), recursive: false, onEvent: () => {} }),
    ).rejects.toMatchObject({ code: "NotFound" });
  });

  it("falls back to walking with the list method when find is unavailable", async () => {
    // A context whose shell pretends `command -v` finds nothing, as in a sandbox without find/stat.
    const noFind: EmulationContext = {
      ...bed.ctx,
      exec: (sandbox, script, options) =>
        bed.ctx.exec(sandbox, `command() { return 1; }\n${script}`, options),
    };
    const fallback = emulatedWatch(noFind, emulatedFiles(bed.ctx), { intervalMs: 40 });
    await bed.sh(`mkdir -p ${p("w4/x")}`);
    const events: WatchEvent[] = [];
    const watcher = await fallback(bed.sandbox, p("w4"), {
      signal: call(),
      recursive: true,
      onEvent: (e) => events.push(e),
    });
    try {
      await bed.sh(`printf 1 > ${p("w4/x/f")}`);
      await until(events, { type: "create", path: p("w4/x/f") });
      await bed.sh(`rm ${p("w4/x/f")}`);
      await until(events, { type: "delete", path: p("w4/x/f") });
    } finally {
      await watcher.close();
    }
    const without = emulatedWatch(noFind, undefined, { intervalMs: 40 });
    await expect(
      without(bed.sandbox, p("w4"), { signal: call(), recursive: true, onEvent: () => {} }),
    ).rejects.toMatchObject({ code: "NotSupported" });
  });
});
