/**
 * `@sbox/conformance/vitest`: registers the conformance cases with vitest, one `it` per case.
 *
 * ```ts
 * // test/conformance.test.ts
 * import { runConformance } from "@sbox/conformance/vitest";
 * import { myProvider } from "../src/index.js";
 *
 * runConformance({ provider: () => myProvider() });
 * ```
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import type { ConformanceOptions } from "./conformance-options.js";
import type { CaseReport } from "./conformance-report.js";
import { createConformanceRun } from "./conformance-run.js";
import { assembleReport } from "./run-conformance-report.js";

/**
 * When this environment variable names a directory, every `runConformance` suite writes its JSON report
 * there (`{ target, report }`), so CI can build the conformance matrix from the test run itself instead of
 * running the kit a second time (`apps/conformance --from-reports DIR`).
 */
export const REPORT_DIR_ENV = "SBOX_CONFORMANCE_REPORT_DIR";

const DEFAULT_TIMEOUT_MS = 60_000;
/** Room for cleanup after a case's own time limit. */
const CLEANUP_MARGIN_MS = 75_000;

/**
 * Registers the whole kit as a vitest suite named after the provider and mode. Cases the provider's
 * capability map rules out appear as skipped with the reason in their name; excluded cases likewise,
 * marked `excluded`. The last test checks that no sandbox outlived the run.
 */
export function runConformance(options: ConformanceOptions): void {
  const run = createConformanceRun(options);
  let started = Date.now();
  const reports = new Map<string, CaseReport>();
  describe(`@sbox/conformance: ${run.providerName} (${run.mode})`, () => {
    // Suites are registered together and run one after another: time this one from its own start.
    beforeAll(() => {
      started = Date.now();
    });
    afterAll(async () => {
      const { leaked } = await run.finish();
      const directory = process.env[REPORT_DIR_ENV];
      if (!directory) return;
      // Cases that did not run (skipped, excluded) resolve at once with their reason.
      const cases: CaseReport[] = [];
      for (const planned of run.plan)
        cases.push(reports.get(planned.case.id) ?? (await run.runCase(planned.case.id)));
      const report = assembleReport(run, cases, leaked, started);
      mkdirSync(directory, { recursive: true });
      const target = options.label ?? run.providerName;
      const file = join(
        directory,
        `${target.replace(/[^A-Za-z0-9._-]+/g, "_")}.${run.mode}.${run.runId}.json`,
      );
      writeFileSync(file, `${JSON.stringify({ target, report }, null, 2)}\n`);
    }, CLEANUP_MARGIN_MS * 2);
    for (const planned of run.plan) {
      const { id } = planned.case;
      if (planned.status !== "run") {
        it.skip(`${id} — ${planned.status}: ${planned.reason ?? ""}`, () => {});
        continue;
      }
      const limit = Math.max(planned.case.timeoutMs ?? 0, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
      it(
        `${id}: ${planned.case.title}`,
        async (context) => {
          const report = await run.runCase(id);
          reports.set(id, report);
          if (report.status === "failed") throw new Error(report.reason ?? `${id}: failed`);
          if (report.status === "skipped") context.skip(report.reason);
        },
        limit + CLEANUP_MARGIN_MS,
      );
    }
  });
}

export type { ConformanceOptions } from "./conformance-options.js";
