/**
 * `pnpm --filter @sbox/conformance-app run matrix [--readme] [--targets a,b] [--cases prefix,...]
 *  [--report path] [--matrix path] [--capabilities path] [--allow-failures] [--from-reports dir]`
 *
 * With `--from-reports DIR` it runs nothing and builds the report and matrix from the JSON reports the
 * providers' own conformance tests wrote there (`SBOX_CONFORMANCE_REPORT_DIR`): how CI gets the matrix
 * without running the kit twice.
 *
 * Runs the conformance kit against every provider of this workspace that can run here, as declared and
 * primitives-only, writes the JSON report, the Markdown matrix and docs/capabilities.md (the capability
 * model from @sbox/core with each provider's declaration), and (with --readme) rewrites the block
 * between the conformance-matrix markers of the root README. Exits 1 when a case failed, unless
 * --allow-failures.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { type ConformanceReport, runConformanceReport } from "@sbox/conformance";
import { renderCapabilitiesDoc } from "./capabilities-doc.js";
import { type MatrixRun, renderMatrix, type SkippedTarget } from "./matrix-markdown.js";
import { CONFORMANCE_TARGETS, type ConformanceTarget, type ProviderModule } from "./provider-targets.js";
import { BLOCK_END, BLOCK_START, replaceBlock } from "./readme-block.js";
import { findRepoRoot, workspacePackages } from "./workspace-packages.js";

const { values } = parseArgs({
  options: {
    readme: { type: "boolean", default: false },
    targets: { type: "string" },
    cases: { type: "string" },
    report: { type: "string" },
    matrix: { type: "string" },
    capabilities: { type: "string" },
    "allow-failures": { type: "boolean", default: false },
    "from-reports": { type: "string" },
  },
});

const log = (line: string) => process.stderr.write(`${line}\n`);
const root = findRepoRoot(dirname(fileURLToPath(import.meta.url)));
const reportPath = resolve(values.report ?? join(root, "conformance-report.json"));
const matrixPath = resolve(values.matrix ?? join(root, "docs", "conformance-matrix.md"));
const capabilitiesPath = resolve(values.capabilities ?? join(root, "docs", "capabilities.md"));
const onlyTargets = values.targets?.split(",").map((t) => t.trim());
const onlyCases = values.cases?.split(",").map((c) => c.trim());

const packages = new Map(workspacePackages(root).map((p) => [p.name, p]));
const known = new Set(CONFORMANCE_TARGETS.map((t) => t.packageName));
const runs: MatrixRun[] = [];
const skipped: SkippedTarget[] = [];

for (const pkg of packages.values()) {
  if (/^@sbox\/provider-/.test(pkg.name) && !known.has(pkg.name)) {
    skipped.push({
      target: pkg.name,
      reason: "no conformance target is defined for it in apps/conformance/src/provider-targets.ts",
    });
  }
}

for (const target of CONFORMANCE_TARGETS) {
  if (onlyTargets && !onlyTargets.includes(target.id)) continue;
  const pkg = packages.get(target.packageName);
  // A provider package that does not exist in this checkout is simply not part of the matrix.
  if (!pkg) continue;
  const missingEnv = (target.env ?? []).filter((name) => !process.env[name]);
  if (missingEnv.length > 0) {
    skipped.push({ target: target.id, reason: `live provider: set ${missingEnv.join(" and ")} to run it` });
    log(`- ${target.id}: SKIPPED (set ${missingEnv.join(", ")})`);
    continue;
  }
  if (values["from-reports"]) continue;
  if (!pkg.built || !pkg.entry) {
    skipped.push({ target: target.id, reason: `${pkg.name} is not built (run pnpm build first)` });
    log(`- ${target.id}: SKIPPED (${pkg.name} not built)`);
    continue;
  }
  const blocked = target.precondition?.(root);
  if (blocked) {
    skipped.push({ target: target.id, reason: blocked });
    log(`- ${target.id}: SKIPPED (${blocked})`);
    continue;
  }
  const module = (await import(pathToFileURL(pkg.entry).href)) as ProviderModule;
  try {
    await runTarget(target, module);
  } finally {
    target.cleanup?.();
  }
}

if (values["from-reports"]) {
  const directory = resolve(values["from-reports"]);
  const files = readdirSync(directory)
    .filter((f) => f.endsWith(".json"))
    .sort();
  for (const file of files) runs.push(JSON.parse(readFileSync(join(directory, file), "utf8")) as MatrixRun);
  runs.sort((a, b) => a.target.localeCompare(b.target) || a.report.mode.localeCompare(b.report.mode));
  log(`read ${runs.length} conformance report(s) from ${directory}`);
  if (runs.length === 0) process.exitCode = 1;
}

async function runTarget(target: ConformanceTarget, module: ProviderModule): Promise<void> {
  for (const mode of target.modes ?? ["declared", "primitives-only"]) {
    const tempDir = mkdtempSync(join(tmpdir(), "sbox-conformance-matrix-"));
    log(`- ${target.id} (${mode}): running`);
    let report: ConformanceReport;
    try {
      const factory = target.factory(module, tempDir);
      report = await runConformanceReport({
        ...(target.options ?? {}),
        provider: () => factory(),
        providerWithOptions: factory,
        primitivesOnly: mode === "primitives-only",
        only: onlyCases,
        onCase: (c) => {
          if (c.status === "failed") log(`    FAIL ${c.id} (${c.ms} ms): ${c.reason}`);
          else if (c.status === "passed") log(`    ok   ${c.id} (${c.ms} ms)`);
        },
      });
    } finally {
      rmSync(tempDir, { recursive: true, force: true });
    }
    const s = report.summary;
    log(
      `  ${target.id} (${mode}): ${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped, ${s.excluded} excluded in ${Math.round(report.durationMs / 1000)} s`,
    );
    runs.push({ target: target.id, report });
  }
}

const generatedAt = new Date();
writeFileSync(
  reportPath,
  `${JSON.stringify({ generatedAt: generatedAt.toISOString(), runs, skipped }, null, 2)}\n`,
);
log(`wrote ${reportPath}`);
await mkdir(dirname(matrixPath), { recursive: true });
const page = `# Conformance matrix\n\n<!-- generated by apps/conformance (pnpm conformance); do not edit by hand -->\n\n${renderMatrix(runs, skipped, { details: true, generatedAt })}`;
writeFileSync(matrixPath, page);
log(`wrote ${matrixPath}`);
writeFileSync(capabilitiesPath, renderCapabilitiesDoc(runs));
log(`wrote ${capabilitiesPath}`);

if (values.readme) {
  const readmePath = join(root, "README.md");
  const readme = readFileSync(readmePath, "utf8");
  const block = `${renderMatrix(runs, skipped, { details: false, generatedAt })}\nDetails and failure reasons: [docs/conformance-matrix.md](docs/conformance-matrix.md).\n`;
  const updated = replaceBlock(readme, block);
  if (updated === undefined) {
    log(`README.md has no ${BLOCK_START} ... ${BLOCK_END} block: left unchanged`);
    process.exitCode = 1;
  } else {
    writeFileSync(readmePath, updated);
    log("rewrote the conformance block of README.md");
  }
}

const failed = runs.reduce((sum, run) => sum + run.report.summary.failed, 0);
if (failed > 0 && !values["allow-failures"]) {
  log(`${failed} case(s) failed`);
  process.exitCode = 1;
}
