#!/usr/bin/env node
// Runs every workspace package's vitest suite, a few side by side (SBOX_TEST_LANES, default 3), then prints
// one plain totals line that CI can read: "N passed, N failed, N skipped". Exits non-zero if anything failed.
// `node scripts/run-tests.mjs <package>...` runs only the named suites.
import { spawn, spawnSync } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
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

/**
 * How many suites run side by side. Suites cannot see each other's sandboxes (each labels its own and
 * checks leaks by its own run id), and most of their time is spent waiting on sandboxes, containers and
 * emulators rather than computing, so a few lanes shorten the run without starving any one suite.
 */
// biome-ignore lint/suspicious/noUndeclaredEnvVars: read by this script only, never by a build task
const lanes = Math.max(1, Number.parseInt(process.env.SBOX_TEST_LANES ?? "3", 10) || 3);

/**
 * Runs one vitest suite (`command` in `dir`) writing its JSON report to `report`, and counts it in the
 * totals. Its output goes to a log file and is printed whole when the suite ends, so side-by-side suites
 * do not interleave; a line every minute says which suites are still running.
 */
function runSuite(label, dir, report, command = "pnpm", prefix = ["exec", "vitest"], env = process.env) {
  const started = Date.now();
  const logFile = join(reportDir, `${label.replace(/[^A-Za-z0-9._-]+/g, "_")}.log`);
  const log = openSync(logFile, "w");
  const child = spawn(
    command,
    [...prefix, "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`],
    { cwd: dir, stdio: ["ignore", log, log], env },
  );
  running.set(label, started);
  return new Promise((resolveSuite) => {
    child.on("close", (status) => {
      closeSync(log);
      running.delete(label);
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      console.log(`\n=== ${label} ===`);
      process.stdout.write(readFileSync(logFile, "utf8"));
      if (!existsSync(report)) {
        console.log(`${label}: vitest wrote no report (exit ${status}) after ${seconds}s`);
        broken.push(label);
        totals.failed += 1;
        resolveSuite();
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
      if (status !== 0 && failed + suiteFailures === 0) {
        broken.push(label);
        totals.failed += 1;
      }
      resolveSuite();
    });
  });
}

/** Suites still running, with their start time. */
const running = new Map();
const heartbeat = setInterval(() => {
  const now = Date.now();
  const list = [...running].map(([label, at]) => `${label} (${Math.round((now - at) / 1000)}s)`);
  if (list.length > 0) console.log(`... still running: ${list.join(", ")}`);
}, 60_000);

/**
 * The suites that take longest start first (the longest-first rule keeps the lanes evenly loaded); the
 * rest follow in name order. The figures are only an order, measured on a 2-core machine.
 */
const LONGEST_FIRST = [
  "@sbox/provider-local",
  "@sbox/provider-vercel",
  "@sbox/provider-docker",
  "@sbox/provider-e2b",
  "@sbox/provider-fly",
  "@sbox/provider-kubernetes",
  "@sbox/provider-daytona",
  "@sbox/example-minimal-sh-provider",
  "@sbox/core",
  "@sbox/emulators",
  "@sbox/cli",
];
const rank = (name) => {
  const at = LONGEST_FIRST.indexOf(name);
  return at < 0 ? LONGEST_FIRST.length : at;
};

const jobs = packages
  .slice()
  .sort((a, b) => rank(a.name) - rank(b.name))
  .map((pkg) => () => runSuite(pkg.name, pkg.dir, join(reportDir, `${pkg.name.replace(/[@/]/g, "_")}.json`)));

// SBOX_TEST_AS_USER=<user> (run as root): the provider-local suite, conformance included, runs a second time
// as that unprivileged user, from a copy of this built checkout the user owns (it may not be able to reach
// this one, and vitest writes caches next to the sources). Its conformance reports stay out of the matrix,
// which describes the run above. It starts second, next to the root run of the same suite.
// biome-ignore lint/suspicious/noUndeclaredEnvVars: set by .ci/run for this script only, never by a build task
const asUser = process.env.SBOX_TEST_AS_USER;
if (asUser && (only.length === 0 || only.some((name) => name.includes("provider-local")))) {
  // Copied before any suite starts: the root run of the same package writes next to its sources (a copy
  // taken while it ran saw "file changed as we read it").
  const asUserCheckout = copyCheckoutFor(asUser);
  jobs.splice(1, 0, () => runAsUser(asUser, asUserCheckout));
}

/** A copy of this built checkout that `user` owns, at a fixed path under /var/tmp. */
function copyCheckoutFor(user) {
  const asUserCheckout = `/var/tmp/sbox-test-as-${user}`;
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
      user,
    ],
    { stdio: "inherit" },
  );
  if (copy.status !== 0) {
    broken.push(`copy of the checkout for ${user}`);
    totals.failed += 1;
  }
  return asUserCheckout;
}

async function runAsUser(user, asUserCheckout) {
  const dir = join(asUserCheckout, "packages", "provider-local");
  const userReports = join(asUserCheckout, ".test-reports-as-user");
  mkdirSync(userReports, { recursive: true });
  spawnSync("chown", ["-R", user, userReports]);
  const home = spawnSync("sh", ["-c", 'getent passwd "$1" | cut -d: -f6', "sh", user], {
    encoding: "utf8",
  }).stdout.trim();
  await runSuite(
    `@sbox/provider-local (as the unprivileged user ${user})`,
    dir,
    join(userReports, "provider-local.json"),
    "runuser",
    [
      "-u",
      user,
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

const runStarted = Date.now();
console.log(`running ${jobs.length} suites, ${lanes} side by side (SBOX_TEST_LANES)`);
await Promise.all(
  Array.from({ length: Math.min(lanes, jobs.length) }, async () => {
    for (let job = jobs.shift(); job; job = jobs.shift()) await job();
  }),
);
clearInterval(heartbeat);
console.log(`\nall suites done in ${((Date.now() - runStarted) / 1000).toFixed(0)}s`);

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
