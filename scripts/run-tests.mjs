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

/** Runs one vitest suite (`command` in `dir`) writing its JSON report to `report`, and counts it in the totals. */
function runSuite(label, dir, report, command = "pnpm", prefix = ["exec", "vitest"], env = process.env) {
  console.log(`\n=== ${label} ===`);
  const started = Date.now();
  const run = spawnSync(
    command,
    [...prefix, "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`],
    {
      cwd: dir,
      stdio: "inherit",
      env,
    },
  );
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (!existsSync(report)) {
    console.log(`${label}: vitest wrote no report (exit ${run.status}) after ${seconds}s`);
    broken.push(label);
    totals.failed += 1;
    return;
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
    `${label}: ${passed} passed, ${failed + suiteFailures} failed, ${skipped} skipped (${seconds}s)`,
  );
  if (run.status !== 0 && failed + suiteFailures === 0) {
    broken.push(label);
    totals.failed += 1;
  }
}

for (const pkg of packages) {
  runSuite(pkg.name, pkg.dir, join(reportDir, `${pkg.name.replace(/[@/]/g, "_")}.json`));
}

// SBOX_TEST_AS_USER=<user> (run as root): the provider-local suite, conformance included, runs a second time
// as that unprivileged user, from a copy of this built checkout the user owns (it may not be able to reach
// this one, and vitest writes caches next to the sources). Its conformance reports stay out of the matrix,
// which describes the run above.
// biome-ignore lint/suspicious/noUndeclaredEnvVars: set by .ci/run for this script only, never by a build task
const asUser = process.env.SBOX_TEST_AS_USER;
if (asUser && (only.length === 0 || only.some((name) => name.includes("provider-local")))) {
  const asUserCheckout = `/var/tmp/sbox-test-as-${asUser}`;
  rmSync(asUserCheckout, { recursive: true, force: true });
  mkdirSync(asUserCheckout, { recursive: true });
  const copy = spawnSync(
    "sh",
    [
      "-c",
      'tar -C "$1" --exclude=./.git --exclude=./.test-reports -cf - . | tar -C "$2" -xf - && chown -R "$3" "$2"',
      "sh",
      root,
      asUserCheckout,
      asUser,
    ],
    { stdio: "inherit" },
  );
  if (copy.status !== 0) {
    broken.push(`copy of the checkout for ${asUser}`);
    totals.failed += 1;
  }
  const dir = join(asUserCheckout, "packages", "provider-local");
  const userReports = join(asUserCheckout, ".test-reports-as-user");
  mkdirSync(userReports, { recursive: true });
  spawnSync("chown", ["-R", asUser, userReports]);
  const home = spawnSync("sh", ["-c", 'getent passwd "$1" | cut -d: -f6', "sh", asUser], {
    encoding: "utf8",
  }).stdout.trim();
  runSuite(
    `@sbox/provider-local (as the unprivileged user ${asUser})`,
    dir,
    join(userReports, "provider-local.json"),
    "runuser",
    [
      "-u",
      asUser,
      "--",
      "env",
      "-i",
      `HOME=${home || "/tmp"}`,
      "PATH=/usr/local/bin:/usr/bin:/bin",
      "CI=true",
      `SBOX_CONFORMANCE_REPORT_DIR=${join(userReports, "conformance")}`,
      "./node_modules/.bin/vitest",
    ],
  );
  rmSync(asUserCheckout, { recursive: true, force: true });
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
