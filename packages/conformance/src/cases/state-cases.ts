import { ConformanceFailure, check, expectEqual, show } from "../assertions.js";
import type { ConformanceCase } from "../conformance-case.js";
import { existsViaShell } from "../sandbox-scripts.js";

/** Snapshots and forks. */
export function stateCases(): ConformanceCase[] {
  return [
    {
      id: "snapshots.create-restore",
      title:
        "a snapshot restores the files as they were (changed files reverted, new files gone); list and delete agree",
      requires: ["snapshot"],
      timeoutMs: 180_000,
      async run(ctx) {
        const sandbox = await ctx.createSandbox();
        const snapshots = sandbox.snapshots;
        if (!snapshots)
          throw new ConformanceFailure("expected sandbox.snapshots to be defined (snapshot is supported)");
        const dir = await ctx.scratchDir(sandbox);
        await sandbox.files.write(`${dir}/kept.txt`, "before snapshot");
        const ref = await snapshots.create({ name: `sbox-conformance-${ctx.runId}` });
        check(typeof ref.id === "string" && ref.id.length > 0, `expected a snapshot id, got ${show(ref.id)}`);
        check(ref.createdAt instanceof Date, `expected createdAt to be a Date, got ${show(ref.createdAt)}`);
        let deleted = false;
        ctx.defer(async () => {
          if (!deleted) await snapshots.delete(ref);
        });
        await sandbox.files.write(`${dir}/kept.txt`, "changed after snapshot");
        await sandbox.files.write(`${dir}/new.txt`, "created after snapshot");
        await snapshots.restore(ref);
        expectEqual(
          await sandbox.files.readText(`${dir}/kept.txt`),
          "before snapshot",
          "content of a file after restore",
        );
        check(
          !(await existsViaShell(sandbox, `${dir}/new.txt`)),
          "expected a file created after the snapshot to be gone after restore",
        );
        const listed = await snapshots.list();
        check(
          listed.some((s) => s.id === ref.id),
          `expected snapshots.list() to include ${ref.id}, got ${show(listed.map((s) => s.id))}`,
        );
        await snapshots.delete(ref);
        deleted = true;
        const after = await snapshots.list();
        check(
          !after.some((s) => s.id === ref.id),
          `expected snapshots.list() not to include ${ref.id} after delete`,
        );
      },
    },
    {
      id: "fork.independent",
      title:
        "fork({ count: 2 }) makes two new sandboxes with the parent's files, and changes in one are invisible to the others",
      requires: ["fork"],
      timeoutMs: 180_000,
      async run(ctx) {
        const parent = await ctx.createSandbox();
        const fork = parent.fork;
        if (!fork) throw new ConformanceFailure("expected sandbox.fork to be defined (fork is supported)");
        const dir = await ctx.scratchDir(parent);
        // A fork is compared at the same place relative to its own workdir (hosts without path isolation
        // give each sandbox a different absolute workdir).
        const relative = dir.slice((await ctx.workdir(parent)).length);
        await parent.files.write(`${dir}/shared.txt`, "from parent");
        const children = await fork({ count: 2 });
        for (const child of children) ctx.track(child);
        expectEqual(children.length, 2, "number of forks");
        const ids = new Set([parent.id, ...children.map((c) => c.id)]);
        expectEqual(ids.size, 3, "number of distinct ids among parent and forks");
        const [a, b] = children as [(typeof children)[0], (typeof children)[0]];
        const dirA = `${await ctx.workdir(a)}${relative}`;
        const dirB = `${await ctx.workdir(b)}${relative}`;
        for (const [name, child, childDir] of [
          ["fork 0", a, dirA],
          ["fork 1", b, dirB],
        ] as const) {
          expectEqual(
            await child.files.readText(`${childDir}/shared.txt`),
            "from parent",
            `content seen by ${name}`,
          );
          expectEqual((await child.getInfo()).state, "running", `state of ${name}`);
        }
        await a.files.write(`${dirA}/shared.txt`, "changed in fork 0");
        await parent.files.write(`${dir}/parent-only.txt`, "x");
        expectEqual(
          await parent.files.readText(`${dir}/shared.txt`),
          "from parent",
          "parent's content after fork 0 wrote",
        );
        expectEqual(
          await b.files.readText(`${dirB}/shared.txt`),
          "from parent",
          "fork 1's content after fork 0 wrote",
        );
        check(
          !(await existsViaShell(a, `${dirA}/parent-only.txt`)),
          "expected a file the parent wrote after the fork to be invisible in fork 0",
        );
        await a.destroy();
        expectEqual((await parent.getInfo()).state, "running", "parent state after destroying a fork");
      },
    },
  ];
}
