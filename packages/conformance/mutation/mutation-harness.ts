/**
 * What the mutation script runs against one (mutated) copy of the sources: the kit, through its plain
 * runner, against the example adapter in the configurations it names, and one JSON line per
 * configuration on stdout. Bundled by esbuild from the copy, so the kit, the core and the example all
 * come from the mutated tree.
 *
 * Input (argv[2], JSON): `{ "rootBase": DIR, "targets": ["example", ...], "only": ["exec.primitive", ...] }`.
 * Every sandbox lives under `rootBase`, so the script can find and end whatever a mutant leaves running.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SandboxProvider } from "@sbox/core/spec";
import { minimalShProvider } from "../../../examples/minimal-sh-provider/src/index.js";
import { runConformanceReport } from "../src/index.js";
import { outputOnlyExec } from "../test/fixtures/output-only-exec.js";

/** The configurations a mutant is run in. */
const TARGETS: Record<
  string,
  { primitivesOnly: boolean; make: (root: string, extra?: Record<string, unknown>) => SandboxProvider }
> = {
  /** The example as declared (the core's E3/E4/E5/E6/E8 over its exec). */
  example: { primitivesOnly: false, make: (root, extra = {}) => minimalShProvider({ root, ...extra }) },
  /** Primitives-only mode: E1/E2 under the emulations as well. */
  "example-primitives": {
    primitivesOnly: true,
    make: (root, extra = {}) => minimalShProvider({ root, ...extra }),
  },
  /** Output-only exec without streaming: E2 on raw user output, user commands through doExec. */
  "output-only": { primitivesOnly: false, make: (root, extra = {}) => outputOnlyExec(root, extra) },
};

const input = JSON.parse(process.argv[2] ?? "{}") as {
  rootBase?: string;
  targets?: string[];
  only?: string[];
};
for (const name of input.targets ?? []) {
  const target = TARGETS[name];
  if (!target) {
    process.stdout.write(`${JSON.stringify({ target: name, error: "unknown target" })}\n`);
    continue;
  }
  const root = mkdtempSync(join(input.rootBase ?? tmpdir(), `${name}-`));
  try {
    const report = await runConformanceReport({
      provider: () => target.make(root),
      providerWithOptions: (extra) => target.make(root, extra),
      primitivesOnly: target.primitivesOnly,
      ...(input.only && input.only.length > 0 ? { only: input.only } : {}),
    });
    const failed = report.cases
      .filter((c) => c.status === "failed")
      .map((c) => ({ id: c.id, reason: (c.reason ?? "").slice(0, 300) }));
    process.stdout.write(
      `${JSON.stringify({ target: name, failed, passed: report.summary.passed, skipped: report.summary.skipped })}\n`,
    );
  } catch (error) {
    process.stdout.write(`${JSON.stringify({ target: name, error: String(error).slice(0, 300) })}\n`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
// Background loops of a mutant that leaks processes must not keep this run alive.
process.exit(0);
