import { ConformanceFailure, expectEqual, show } from "../assertions.js";
import type { ConformanceCase } from "../conformance-case.js";

/** Parallel use of one sandbox and of several sandboxes. */
export function concurrencyCases(): ConformanceCase[] {
  return [
    {
      id: "concurrency.commands.parallel-20",
      title: "20 commands run in parallel on one sandbox each get their own stdout, stderr and exit code",
      requires: [],
      timeoutMs: 120_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            sandbox.commands.run(`printf 'out-${i}'; sleep ${i % 2}; printf 'err-${i}' >&2; exit ${i % 7}`),
          ),
        );
        const wrong: string[] = [];
        results.forEach((r, i) => {
          if (r.stdout !== `out-${i}` || r.stderr !== `err-${i}` || r.exitCode !== i % 7) {
            wrong.push(`#${i}: stdout ${show(r.stdout)}, stderr ${show(r.stderr)}, exit ${r.exitCode}`);
          }
        });
        if (wrong.length > 0)
          throw new ConformanceFailure(
            `expected each command's own output and exit code; wrong: ${wrong.join("; ")}`,
          );
      },
    },
    {
      id: "concurrency.sandboxes.parallel-5",
      title:
        "5 sandboxes created in parallel are distinct, each works on its own files, and all are destroyed in parallel",
      requires: [],
      timeoutMs: 180_000,
      async run(ctx) {
        const sandboxes = await Promise.all(Array.from({ length: 5 }, () => ctx.createSandbox()));
        expectEqual(new Set(sandboxes.map((s) => s.id)).size, 5, "number of distinct ids");
        const dirs = await Promise.all(sandboxes.map((s) => ctx.scratchDir(s)));
        await Promise.all(sandboxes.map((s, i) => s.files.write(`${dirs[i]}/who.txt`, `sandbox-${i}`)));
        const seen = await Promise.all(sandboxes.map((s, i) => s.files.readText(`${dirs[i]}/who.txt`)));
        for (const [i, text] of seen.entries())
          expectEqual(text, `sandbox-${i}`, `content read back in sandbox ${i}`);
        await Promise.all(sandboxes.map((s) => s.destroy()));
        const states = await Promise.all(
          sandboxes.map((s) =>
            s.getInfo().then(
              (i) => i.state,
              (e: unknown) => ((e as { code?: string }).code === "NotFound" ? "destroyed" : show(e)),
            ),
          ),
        );
        for (const [i, state] of states.entries())
          expectEqual(state, "destroyed", `state of sandbox ${i} after parallel destroy`);
      },
    },
  ];
}
