import type { CaseReport, ConformanceReport } from "@sbox/conformance";
import { CAPABILITY_NAMES, type CapabilityName } from "@sbox/core/spec";

/** One finished run of the kit. */
export interface MatrixRun {
  /** Target id, e.g. `"local (bwrap)"`. */
  target: string;
  report: ConformanceReport;
}

/** A target that did not run here, and why (missing credentials name their variables). */
export interface SkippedTarget {
  target: string;
  reason: string;
}

/** Options of {@link renderMatrix}. */
export interface RenderOptions {
  /** Include the per-run failure lists (the docs page); the README block leaves them out. */
  details: boolean;
  /** When the runs were made. */
  generatedAt: Date;
}

const MARK = { passed: "✅", failed: "❌", none: "➖" } as const;

function escapeCell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\r?\n/g, " ");
}

/** The cases that speak for `capability` in `report`: its positive cases, or its negative case when unsupported. */
function casesFor(report: ConformanceReport, capability: CapabilityName): CaseReport[] {
  const level = report.effective[capability];
  return report.cases.filter((c) =>
    level === "unsupported" ? c.unsupportedOf === capability : c.requires.includes(capability),
  );
}

/** A cell: the level and the aggregate result of the cases that hold it. */
export function cellOf(level: string, cases: readonly CaseReport[]): string {
  const failed = cases.filter((c) => c.status === "failed").length;
  const passed = cases.filter((c) => c.status === "passed").length;
  if (failed > 0) return `${level} ${MARK.failed} ${failed}/${failed + passed}`;
  if (passed > 0) return `${level} ${MARK.passed}`;
  return `${level} ${MARK.none}`;
}

function baseCases(report: ConformanceReport): CaseReport[] {
  return report.cases.filter((c) => c.requires.length === 0 && c.unsupportedOf === undefined);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(0)} s`;
}

/** Renders the matrix: a summary per run, then capability x run with level and result. */
export function renderMatrix(
  runs: readonly MatrixRun[],
  skipped: readonly SkippedTarget[],
  options: RenderOptions,
): string {
  const lines: string[] = [];
  lines.push(
    `Generated ${options.generatedAt.toISOString().slice(0, 10)} by \`pnpm conformance\` (apps/conformance) with @sbox/conformance, Node ${process.versions.node} on ${process.platform}.`,
    "",
  );
  if (runs.length > 0) {
    lines.push(
      "| provider | mode | passed | failed | skipped | excluded | leaked | time |",
      "|---|---|---:|---:|---:|---:|---:|---:|",
    );
    for (const { target, report } of runs) {
      const s = report.summary;
      lines.push(
        `| ${escapeCell(target)} | ${report.mode} | ${s.passed} | ${s.failed} | ${s.skipped} | ${s.excluded} | ${report.leaked.length} | ${seconds(report.durationMs)} |`,
      );
    }
    lines.push("");
    const header = runs.map(({ target, report }) => `${escapeCell(target)}<br>${report.mode}`);
    lines.push(`| capability | ${header.join(" | ")} |`, `|---|${runs.map(() => "---").join("|")}|`);
    lines.push(
      `| *base contract* | ${runs.map(({ report }) => cellOf("", baseCases(report)).trim()).join(" | ")} |`,
    );
    for (const capability of CAPABILITY_NAMES) {
      const cells = runs.map(({ report }) =>
        cellOf(report.effective[capability], casesFor(report, capability)),
      );
      lines.push(`| ${capability} | ${cells.join(" | ")} |`);
    }
    lines.push(
      "",
      `${MARK.passed} every case holding the capability passed (for \`unsupported\`: the negative case — NotSupported before any provider call), ` +
        `${MARK.failed} n/m cases failed, ${MARK.none} no case ran (skipped for a missing fixture, or excluded with a reason). ` +
        "*base contract*: the cases every provider must pass (exec, files, lifecycle, errors, no sandbox left behind).",
    );
  } else {
    lines.push("No provider could run here.");
  }
  if (skipped.length > 0) {
    lines.push("", "Not run here:", "");
    for (const s of skipped) lines.push(`- **${escapeCell(s.target)}**: ${escapeCell(s.reason)}`);
  }
  if (options.details) {
    for (const { target, report } of runs) {
      const notPassed = report.cases.filter((c) => c.status === "failed" || c.status === "excluded");
      if (notPassed.length === 0) continue;
      lines.push(
        "",
        `<details><summary>${escapeCell(target)} (${report.mode}): ${report.summary.failed} failed, ${report.summary.excluded} excluded</summary>`,
        "",
      );
      for (const c of notPassed) {
        const reason =
          (c.reason ?? "").length > 400 ? `${(c.reason ?? "").slice(0, 400)}...` : (c.reason ?? "");
        lines.push(`- ${c.status === "failed" ? MARK.failed : MARK.none} \`${c.id}\`: ${escapeCell(reason)}`);
      }
      lines.push("", "</details>");
    }
  }
  return `${lines.join("\n")}\n`;
}
