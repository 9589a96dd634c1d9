import type { ConformanceOptions } from "./conformance-options.js";
import type { CaseReport, ConformanceReport } from "./conformance-report.js";
import { type ConformanceRun, createConformanceRun } from "./conformance-run.js";

function withUnhandled(report: CaseReport, reasons: readonly unknown[]): CaseReport {
  const detail = reasons.map((r) => (r instanceof Error ? `${r.name}: ${r.message}` : String(r))).join("; ");
  const message = `the SDK raised ${reasons.length} unhandled rejection(s) while this case ran (it may have started earlier): ${detail}`;
  return {
    ...report,
    status: "failed",
    reason: report.status === "failed" ? `${report.reason}; ${message}` : `${report.id}: ${message}`,
  };
}

/**
 * Runs the kit against one provider and returns a JSON report; never throws for a failing case (the
 * report says which failed and why). An unhandled promise rejection raised meanwhile fails the case that
 * was running. Cases run one after the other; the last line is the leak check.
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
  // An unhandled rejection from the SDK would crash a user's process: it fails the case during which it
  // surfaced (instead of crashing this runner, which is Node's default).
  let unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => {
    unhandled.push(reason);
  };
  process.on("unhandledRejection", onUnhandled);
  try {
    for (const planned of run.plan) {
      let report = await run.runCase(planned.case.id);
      if (unhandled.length > 0) report = withUnhandled(report, unhandled);
      unhandled = [];
      cases.push(report);
      options.onCase?.(report);
    }
  } finally {
    leaked = (await run.finish()).leaked;
    process.off("unhandledRejection", onUnhandled);
  }
  return assembleReport(run, cases, leaked, started);
}

/** The JSON report of a finished run: its cases in plan order, the leak check, and the totals. */
export function assembleReport(
  run: ConformanceRun,
  cases: readonly CaseReport[],
  leaked: readonly string[],
  startedMs: number,
): ConformanceReport {
  const count = (status: CaseReport["status"]) => cases.filter((c) => c.status === status).length;
  return {
    provider: run.providerName,
    mode: run.mode,
    runId: run.runId,
    startedAt: new Date(startedMs).toISOString(),
    durationMs: Date.now() - startedMs,
    declared: run.declared,
    effective: run.capabilities.map,
    flags: run.capabilities.flags,
    cases: [...cases],
    selection: {
      ...(run.only ? { only: [...run.only] } : {}),
      exclude: { ...run.exclude },
      notSelected: [...run.notSelected],
    },
    leaked: [...leaked],
    summary: {
      passed: count("passed"),
      failed: count("failed"),
      skipped: count("skipped"),
      excluded: count("excluded"),
      coreOnly: cases.filter((c) => c.status === "passed" && c.coreOnly).length,
    },
  };
}
