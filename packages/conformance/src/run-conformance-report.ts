import type { ConformanceOptions } from "./conformance-options.js";
import type { CaseReport, ConformanceReport } from "./conformance-report.js";
import { createConformanceRun } from "./conformance-run.js";

/**
 * Runs the kit against one provider and returns a JSON report; never throws for a failing case (the
 * report says which failed and why). Cases run one after the other; the last line is the leak check.
 *
 * ```ts
 * const report = await runConformanceReport({ provider: () => local(), primitivesOnly: true });
 * if (report.summary.failed > 0) process.exitCode = 1;
 * ```
 */
export async function runConformanceReport(
  options: ConformanceOptions & { onCase?: ((report: CaseReport) => void) | undefined },
): Promise<ConformanceReport> {
  const started = Date.now();
  const run = createConformanceRun(options);
  const cases: CaseReport[] = [];
  let leaked: string[] = [];
  try {
    for (const planned of run.plan) {
      const report = await run.runCase(planned.case.id);
      cases.push(report);
      options.onCase?.(report);
    }
  } finally {
    leaked = (await run.finish()).leaked;
  }
  const count = (status: CaseReport["status"]) => cases.filter((c) => c.status === status).length;
  return {
    provider: run.providerName,
    mode: run.mode,
    runId: run.runId,
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    declared: run.declared,
    effective: run.capabilities.map,
    flags: run.capabilities.flags,
    cases,
    leaked,
    summary: {
      passed: count("passed"),
      failed: count("failed"),
      skipped: count("skipped"),
      excluded: count("excluded"),
    },
  };
}
