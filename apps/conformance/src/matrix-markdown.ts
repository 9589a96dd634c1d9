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

const MARK = { passed: "✅", failed: "❌", partial: "◐", none: "➖" } as const;

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

/**
 * The result part of a cell. Failed cases win (`❌ n/m`). A case excluded with a reason leaves the
 * capability partial (`◐ passed/all`), never ✅: what was left out was not proven. Passes of cases that
 * hold only the core (coreOnly) do not make a capability ✅ by themselves (`➖ core only`): they pass
 * whatever the adapter does. `undefined` when no case ran.
 */
function resultOf(cases: readonly CaseReport[]): string | undefined {
  const failed = cases.filter((c) => c.status === "failed").length;
  const passed = cases.filter((c) => c.status === "passed");
  const excluded = cases.filter((c) => c.status === "excluded").length;
  if (failed > 0) return `${MARK.failed} ${failed}/${failed + passed.length + excluded}`;
  if (passed.length === 0) return excluded > 0 ? `${MARK.partial} 0/${excluded}` : undefined;
  if (excluded > 0) return `${MARK.partial} ${passed.length}/${passed.length + excluded}`;
  if (passed.every((c) => c.coreOnly)) return `${MARK.none} core only`;
  return MARK.passed;
}

/** A cell: the level and the aggregate result of the cases that hold it. */
export function cellOf(level: string, cases: readonly CaseReport[]): string {
  return `${level} ${resultOf(cases) ?? MARK.none}`;
}

/** How a level is written in the matrix: unsupported as a dash, so a row can be scanned for what is there. */
function levelText(level: string): string {
  return level === "unsupported" ? "—" : level;
}

/**
 * One provider's cell for a capability, folding in every run of it (modes and set-ups): the levels seen
 * (`native/emulated` when primitives-only mode emulates what is native as declared), then the result of
 * all the cases that hold it. A supported capability no case proved says so (`➖ untested`): a claim
 * the kit did not confirm must stand out. An unsupported capability is proven by its negative case,
 * which holds the core's gate (and, through the driver recorder, that the adapter was not reached).
 */
export function providerCellOf(runs: readonly MatrixRun[], capability: CapabilityName): string {
  const levels = [...new Set(runs.map(({ report }) => report.effective[capability]))].sort(
    (a, b) => LEVEL_ORDER.indexOf(a) - LEVEL_ORDER.indexOf(b),
  );
  const cases = runs.flatMap(({ report }) => casesFor(report, capability));
  const level = levels.map(levelText).join("/");
  const result = resultOf(cases);
  if (level === "—" && (result === MARK.passed || result === `${MARK.none} core only`)) return "—";
  if (result !== undefined) return `${level} ${result}`;
  return levels.some((l) => l !== "unsupported") ? `${level} ${MARK.none} untested` : `${level} ${MARK.none}`;
}

const LEVEL_ORDER: readonly string[] = ["native", "emulated", "unsupported"];

/** The runs of each provider, by provider name, in the order they first appear. */
function byProvider(runs: readonly MatrixRun[]): Map<string, MatrixRun[]> {
  const grouped = new Map<string, MatrixRun[]>();
  for (const run of runs)
    grouped.set(run.report.provider, [...(grouped.get(run.report.provider) ?? []), run]);
  return grouped;
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
      "| provider | mode | passed | core-only | failed | skipped | excluded | leaked | time |",
      "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    );
    for (const { target, report } of runs) {
      const s = report.summary;
      // Reports written before coreOnly existed count every pass as the adapter's.
      const coreOnly = s.coreOnly ?? 0;
      lines.push(
        `| ${escapeCell(target)} | ${report.mode} | ${s.passed - coreOnly} | ${coreOnly} | ${s.failed} | ${s.skipped} | ${s.excluded} | ${report.leaked.length} | ${seconds(report.durationMs)} |`,
      );
    }
    lines.push("");
    const providers = byProvider(runs);
    const names = [...providers.keys()];
    lines.push(
      `| capability | ${names.map(escapeCell).join(" | ")} |`,
      `|---|${names.map(() => "---").join("|")}|`,
    );
    lines.push(
      `| *base contract* | ${names
        .map((name) =>
          cellOf(
            "",
            providers.get(name)!.flatMap(({ report }) => baseCases(report)),
          ).trim(),
        )
        .join(" | ")} |`,
    );
    for (const capability of CAPABILITY_NAMES) {
      const cells = names.map((name) => providerCellOf(providers.get(name)!, capability));
      lines.push(`| ${capability} | ${cells.join(" | ")} |`);
    }
    lines.push(
      "",
      "One column per provider, every run of it folded in (both modes, every set-up in the table above). " +
        "A level `a/b` means the runs differ: `native/emulated` is native as declared and emulated by the core in " +
        "primitives-only mode (or set-ups of one provider declare differently, e.g. local with and without " +
        "bubblewrap). `—` is unsupported, proven by the negative case (NotSupported before any provider call). " +
        `${MARK.passed} every case holding the capability passed, ${MARK.failed} n/m cases failed, ` +
        `${MARK.partial} n/m partial: n cases passed and the others were excluded with a reason (listed below), ` +
        `${MARK.none} untested: a capability the provider declares but no case ran for (skipped for a missing fixture), ` +
        `\`${MARK.none} core only\`: the only cases that passed hold the core, whatever the adapter does; ` +
        `\`— ${MARK.none}\` an unsupported one whose negative case did not run. ` +
        "*passed* counts the cases that held the adapter's own code, *core-only* the passes of cases that hold only the " +
        "core (negative cases whose driver recorder shows the adapter untouched, the manifest, input validation), counted apart. " +
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
