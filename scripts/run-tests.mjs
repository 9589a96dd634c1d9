#!/usr/bin/env node
// Runs every workspace package's vitest suite one after another (the machine has 2 cores; suites that
// start real sandboxes, containers and databases are more reliable in sequence), then prints one plain
// totals line that CI can read: "N passed, N failed, N skipped". Exits non-zero if anything failed.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const reportDir = join(root, ".test-reports");
rmSync(reportDir, { recursive: true, force: true });
mkdirSync(reportDir, { recursive: true });
// Every conformance suite writes its JSON report here; the matrix is built from them at the end.
const conformanceDir = join(reportDir, "conformance");
process.env.SBOX_CONFORMANCE_REPORT_DIR = conformanceDir;

const only = process.argv.slice(2);
const packages = [];
for (const group of ["packages", "apps", "examples"]) {
  const dir = join(root, group);
  if (!existsSync(dir)) continue;
  for (const name of readdirSync(dir).sort()) {
    const manifest = join(dir, name, "package.json");
    if (!existsSync(manifest)) continue;
    const pkg = JSON.parse(readFileSync(manifest, "utf8"));
    if (!pkg.scripts?.test) continue;
    if (only.length > 0 && !only.includes(pkg.name) && !only.includes(name)) continue;
    packages.push({ name: pkg.name, dir: join(dir, name) });
  }
}

const totals = { passed: 0, failed: 0, skipped: 0 };
const broken = [];
for (const pkg of packages) {
  const report = join(reportDir, `${pkg.name.replace(/[@/]/g, "_")}.json`);
  console.log(`\n=== ${pkg.name} ===`);
  const started = Date.now();
  const run = spawnSync(
    "pnpm",
    ["exec", "vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`],
    { cwd: pkg.dir, stdio: "inherit", env: process.env },
  );
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (!existsSync(report)) {
    console.log(`${pkg.name}: vitest wrote no report (exit ${run.status}) after ${seconds}s`);
    broken.push(pkg.name);
    totals.failed += 1;
    continue;
  }
  const result = JSON.parse(readFileSync(report, "utf8"));
  const passed = result.numPassedTests ?? 0;
  const failed = result.numFailedTests ?? 0;
  const skipped = (result.numPendingTests ?? 0) + (result.numTodoTests ?? 0);
  // A suite that failed to load counts as a failure even when it held no counted test.
  const suiteFailures = (result.testResults ?? []).filter(
    (s) => s.status === "failed" && s.assertionResults?.length === 0,
  ).length;
  totals.passed += passed;
  totals.failed += failed + suiteFailures;
  totals.skipped += skipped;
  console.log(
    `${pkg.name}: ${passed} passed, ${failed + suiteFailures} failed, ${skipped} skipped (${seconds}s)`,
  );
  if (run.status !== 0 && failed + suiteFailures === 0) {
    broken.push(pkg.name);
    totals.failed += 1;
  }
}
// The conformance report and matrix, built from the reports the suites above wrote (no second kit run).
const matrixApp = join(root, "apps", "conformance", "dist", "matrix.js");
if (existsSync(conformanceDir) && existsSync(matrixApp)) {
  console.log("\n=== conformance report and matrix (from the suites above) ===");
  const matrix = spawnSync(
    process.execPath,
    [matrixApp, "--from-reports", conformanceDir, "--allow-failures"],
    {
      cwd: root,
      stdio: "inherit",
    },
  );
  if (matrix.status !== 0) {
    broken.push("conformance matrix");
    totals.failed += 1;
  }
}
if (broken.length > 0)
  console.log(`suites that exited non-zero without a counted failure: ${broken.join(", ")}`);
console.log(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(totals.failed > 0 || packages.length === 0 ? 1 : 0);
