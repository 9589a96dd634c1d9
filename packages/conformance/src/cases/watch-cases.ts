import type { WatchEvent } from "@sbox/core/spec";
import { check, eventually, show, sleep } from "../assertions.js";
import type { ConformanceCase } from "../conformance-case.js";
import { runOk, shArgs } from "../sandbox-scripts.js";

const EVENT_WAIT_MS = 15_000;

/** File watching. */
export function watchCases(): ConformanceCase[] {
  return [
    {
      id: "files.watch.events",
      title:
        "files.watch reports create, modify and delete of a file changed by a command, and close() stops the events",
      requires: ["filesWatch"],
      timeoutMs: 90_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const dir = await ctx.scratchDir(sandbox);
        const events: WatchEvent[] = [];
        const watcher = await sandbox.files.watch(dir, (event) => events.push(event));
        let closed = false;
        ctx.defer(async () => {
          if (!closed) await watcher.close();
        });
        const file = `${dir}/watched.txt`;
        const seen = (type: WatchEvent["type"], path: string) => () =>
          events.some((e) => e.type === type && e.path === path);
        await runOk(sandbox, shArgs('printf one > "$1"', file), "creating the file");
        check(
          await eventually(seen("create", file), EVENT_WAIT_MS),
          `expected a create event for ${file}, got ${show(events)}`,
        );
        await runOk(sandbox, shArgs('printf " and more" >> "$1"', file), "modifying the file");
        check(
          await eventually(seen("modify", file), EVENT_WAIT_MS),
          `expected a modify event for ${file}, got ${show(events)}`,
        );
        await runOk(sandbox, ["rm", file], "deleting the file");
        check(
          await eventually(seen("delete", file), EVENT_WAIT_MS),
          `expected a delete event for ${file}, got ${show(events)}`,
        );
        await watcher.close();
        closed = true;
        const count = events.length;
        await runOk(sandbox, shArgs('printf x > "$1/after-close"', dir), "creating a file after close");
        await sleep(2_500);
        check(events.length === count, `expected no event after close(), got ${show(events.slice(count))}`);
      },
    },
    {
      id: "files.watch.recursive",
      title:
        "files.watch with recursive reports changes in subdirectories, including ones created after the watch started",
      requires: ["filesWatch"],
      timeoutMs: 90_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const dir = await ctx.scratchDir(sandbox);
        const events: WatchEvent[] = [];
        const watcher = await sandbox.files.watch(dir, (event) => events.push(event), { recursive: true });
        ctx.defer(() => watcher.close());
        await runOk(
          sandbox,
          shArgs('mkdir -p "$1/sub/deeper" && printf x > "$1/sub/deeper/new.txt"', dir),
          "creating a nested file",
        );
        const path = `${dir}/sub/deeper/new.txt`;
        check(
          await eventually(() => events.some((e) => e.type === "create" && e.path === path), EVENT_WAIT_MS),
          `expected a create event for ${path}, got ${show(events)}`,
        );
      },
    },
  ];
}
