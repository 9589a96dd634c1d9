#!/usr/bin/env node
// Runs the integration tests of `@vercel/sandbox`'s own suite (vercel/sandbox, packages/vercel-sandbox:
// the describe blocks gated by RUN_INTEGRATION_TESTS=1, which talk to the live service) unchanged against
// the Vercel Sandbox emulator, and compares the outcome with the checked-in list of tests that cannot
// apply offline.
//
//   pnpm --filter @sbox/emulators build
//   pnpm --filter @sbox/emulators fidelity:vercel -- /path/to/vercel-sandbox [--backend docker|local] [--files a,b] [--keep]
//
// The backend is docker by default, on the image sbox-vercel-base (scripts/build-vercel-base-image.sh):
// commands run as vercel-sandbox with password-less sudo, as on the service, which the SDK's multi-user
// tests need. `--backend local` runs on provider-local, where they cannot apply (no root in the guest).
//
// The checkout is one the developer brought (for example with the `fetch` tool: `fetch github:vercel/sandbox`;
// a bare mirror works too); nothing of it is committed here. Its `packages/vercel-sandbox` (sources and
// tests) is copied into a scratch directory under the system temp dir, the SDK's dependencies are installed
// there from the npm registry, and vitest runs the four files that hold integration tests (the files'
// other tests are unit tests with mocked clients: they run too, and are counted apart). Credentials are set
// as on a developer's machine after `vercel env pull`: only VERCEL_OIDC_TOKEN (the emulator mints one).
// A setup file of this harness (not of the SDK) sends the SDK's `https://vercel.com/api` requests to the
// emulator: the SDK has no setting for its API origin.
//
// Exit status: 0 when every integration test passes except those on fidelity/vercel-cannot-apply.json.
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";

const here = import.meta.dirname;
/** The commit of vercel/sandbox this harness and its cannot-apply list were written against. */
const EXPECTED_COMMIT = "81d725b";
/** The files holding RUN_INTEGRATION_TESTS-gated tests, and the describe blocks so gated. */
const INTEGRATION = {
  "command.test.ts": ["Command"],
  "fork.test.ts": ["Sandbox.fork"],
  "sandbox-user.test.ts": ["SandboxUser integration"],
  "sandbox.test.ts": ["Sandbox"],
};

function usage(message) {
  if (message) console.error(`vercel-fidelity: ${message}`);
  console.error(
    "usage: vercel-fidelity.mjs <path to a vercel/sandbox checkout> [--backend docker|local] [--files f1,f2] [--keep]",
  );
  process.exit(2);
}

const args = process.argv.slice(2).filter((a) => a !== "--");
let checkout;
let backend = "docker";
let files = Object.keys(INTEGRATION);
let keep = false;
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  if (arg === "--backend") backend = args[++i] ?? usage("--backend needs a value");
  else if (arg === "--files")
    files = (args[++i] ?? usage("--files needs a value")).split(",").filter(Boolean);
  else if (arg === "--keep") keep = true;
  else if (arg.startsWith("--")) usage(`unknown option ${arg}`);
  else checkout = resolve(arg);
}
if (!checkout) usage("the path of a vercel/sandbox checkout is required");

function git(...gitArgs) {
  for (const prefix of [
    ["-C", checkout],
    ["--git-dir", checkout],
  ]) {
    const run = spawnSync("git", [...prefix, ...gitArgs], { encoding: "buffer", maxBuffer: 1 << 30 });
    if (run.status === 0) return run.stdout;
  }
  return undefined;
}
const commit = git("rev-parse", "HEAD")?.toString("utf8").trim();
if (!commit?.startsWith(EXPECTED_COMMIT)) {
  console.warn(
    `vercel-fidelity: the checkout is at ${commit ?? "an unknown commit"}, the cannot-apply list was written for ${EXPECTED_COMMIT}; results may differ`,
  );
}

// --- scratch copy of the SDK with its dependencies --------------------------------------------------------
const work = join(tmpdir(), "sbox-vercel-fidelity", (commit ?? "unknown").slice(0, 12));
mkdirSync(work, { recursive: true });
rmSync(join(work, "src"), { recursive: true, force: true });
const sdkDir = join(checkout, "packages", "vercel-sandbox");
if (existsSync(join(sdkDir, "src"))) {
  cpSync(join(sdkDir, "src"), join(work, "src"), { recursive: true });
  cpSync(join(sdkDir, "package.json"), join(work, "vendor-package.json"));
} else {
  // A bare mirror (no work tree): take the package out of HEAD.
  const archive = git(
    "archive",
    "--format=tar",
    "HEAD",
    "packages/vercel-sandbox/src",
    "packages/vercel-sandbox/package.json",
  );
  if (!archive) usage(`${checkout} is not a vercel/sandbox checkout (no packages/vercel-sandbox)`);
  const unpack = spawnSync("tar", ["-x", "-C", work, "--strip-components=2"], { input: archive });
  if (unpack.status !== 0) usage("could not unpack packages/vercel-sandbox from the mirror");
  cpSync(join(work, "package.json"), join(work, "vendor-package.json"));
}
const vendorPackage = JSON.parse(readFileSync(join(work, "vendor-package.json"), "utf8"));
const dependencies = { ...vendorPackage.dependencies, ms: vendorPackage.dependencies.ms ?? "2.1.3" };
// The test runner is pinned to what this repository uses.
dependencies.vitest = "4.1.12";
const depsHash = createHash("sha256").update(JSON.stringify(dependencies)).digest("hex").slice(0, 12);
writeFileSync(
  join(work, "package.json"),
  JSON.stringify({ name: "sbox-vercel-fidelity-run", private: true, type: "module", dependencies }, null, 2),
);
if (readFileSync(join(work, ".deps-hash"), { encoding: "utf8", flag: "a+" }) !== depsHash) {
  console.log(`vercel-fidelity: installing the SDK's dependencies in ${work} (once per dependency set)`);
  const install = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd: work,
    stdio: "inherit",
  });
  if (install.status !== 0) {
    console.error("vercel-fidelity: npm install failed");
    process.exit(1);
  }
  writeFileSync(join(work, ".deps-hash"), depsHash);
}

// --- this harness's vitest configuration and setup file ---------------------------------------------------
writeFileSync(
  join(work, "sbox-fidelity-routing.mjs"),
  `// Written by sbox's vercel-fidelity harness: sends what the SDK addresses to https://vercel.com/api to the
// emulator (plain HTTP), dropping the SDK's own undici dispatcher, and plays Vercel's DNS for port routes:
// https://<subdomain>.vercel.run/<path> goes to the emulator's routes stand-in, <routes>/<subdomain>/<path>.
// Every other URL goes out unchanged.
const origin = "https://vercel.com/api";
const target = process.env.SBOX_VERCEL_API_URL;
const routes = process.env.SBOX_VERCEL_ROUTES_URL;
const original = globalThis.fetch;
globalThis.fetch = (input, init = {}) => {
  const href = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  const { dispatcher: _dropped, ...rest } = init;
  if (href.startsWith(origin + "/")) return original(target + href.slice(origin.length), rest);
  const url = new URL(href);
  if (url.protocol === "https:" && url.hostname.endsWith(".vercel.run")) {
    const subdomain = url.hostname.slice(0, -".vercel.run".length);
    return original(routes + "/" + subdomain + url.pathname + url.search, rest);
  }
  return original(input, init);
};
`,
);
writeFileSync(
  join(work, "vitest.fidelity.config.mjs"),
  `// Written by sbox's vercel-fidelity harness: the SDK's vitest settings (60 s per test) plus the routing.
import { defineConfig } from "vitest/config";
export default defineConfig({
  test: {
    include: ["src/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    environment: "node",
    setupFiles: ["./sbox-fidelity-routing.mjs"],
    fileParallelism: false,
  },
});
`,
);

// --- the emulator and the run -------------------------------------------------------------------------------
const { startVercelEmulator } = await import(join(here, "..", "dist", "vercel", "index.js")).catch(
  (error) => {
    console.error(
      `vercel-fidelity: build the package first (pnpm --filter @sbox/emulators build): ${error.message}`,
    );
    process.exit(1);
  },
);
const emulator = await startVercelEmulator({ backend });
console.log(
  `vercel-fidelity: emulator on ${emulator.url} (routes ${emulator.routesUrl}, backend ${emulator.backend})`,
);
const resultsFile = join(work, "results.json");
rmSync(resultsFile, { force: true });
const started = Date.now();
const env = {
  ...process.env,
  RUN_INTEGRATION_TESTS: "1",
  VERCEL_OIDC_TOKEN: emulator.oidcToken,
  SBOX_VERCEL_API_URL: emulator.url,
  SBOX_VERCEL_ROUTES_URL: emulator.routesUrl,
  // Not a TTY and not production: the SDK would otherwise offer an interactive login.
  CI: "1",
};
for (const name of ["VERCEL_TOKEN", "VERCEL_TEAM_ID", "VERCEL_PROJECT_ID", "VERCEL_URL"]) delete env[name];
const child = await new Promise((resolveRun) => {
  const run = spawn(
    process.execPath,
    [
      join(work, "node_modules", "vitest", "vitest.mjs"),
      "run",
      "--config",
      "vitest.fidelity.config.mjs",
      "--reporter=dot",
      "--reporter=json",
      `--outputFile.json=${resultsFile}`,
      ...files.map((file) => `src/${file}`),
    ],
    { cwd: work, env, stdio: "inherit" },
  );
  run.on("exit", (status) => resolveRun({ status }));
});
const seconds = ((Date.now() - started) / 1000).toFixed(0);
const leftover = emulator.sandboxNames().length;
await emulator.close();
if (!existsSync(resultsFile)) {
  console.error(`vercel-fidelity: vitest wrote no results (exit ${child.status})`);
  process.exit(1);
}

// --- compare with the cannot-apply list ---------------------------------------------------------------------
const cannotApply = JSON.parse(readFileSync(join(here, "vercel-cannot-apply.json"), "utf8")).tests;
// An entry naming backends holds only on those (what provider-local cannot give, the docker backend does).
const listed = (file, name) =>
  cannotApply.find(
    (entry) =>
      entry.file === file &&
      entry.test === name &&
      (entry.backends === undefined || entry.backends.includes(backend)),
  );
const results = JSON.parse(readFileSync(resultsFile, "utf8"));
const counts = { integration: 0, passed: 0, failed: 0, cannotApply: 0, skipped: 0, unit: 0, unitFailed: 0 };
const unexpected = [];
const stale = [];
for (const suite of results.testResults ?? []) {
  const file = relative(join(work, "src"), suite.name);
  const gated = INTEGRATION[file] ?? [];
  for (const test of suite.assertionResults ?? []) {
    const name = [...(test.ancestorTitles ?? []), test.title].join(" > ");
    if (!gated.includes(test.ancestorTitles?.[0])) {
      counts.unit++;
      if (test.status === "failed") counts.unitFailed++;
      continue;
    }
    counts.integration++;
    const entry = listed(file, name);
    if (test.status === "passed") {
      counts.passed++;
      if (entry) stale.push({ file, name });
    } else if (test.status === "failed") {
      if (entry) counts.cannotApply++;
      else {
        counts.failed++;
        unexpected.push({ file, name, message: (test.failureMessages ?? [])[0] ?? "" });
      }
    } else counts.skipped++;
  }
}
console.log("");
console.log(
  `vercel-fidelity: vercel/sandbox ${commit?.slice(0, 12) ?? "?"}, backend ${backend}, ${seconds} s`,
);
console.log(
  `  integration tests: ${counts.integration} — passed ${counts.passed}, cannot apply offline ${counts.cannotApply}, failed ${counts.failed}, skipped ${counts.skipped}`,
);
console.log(
  `  unit tests in the same files (mocked clients, not the emulator): ${counts.unit}, failed ${counts.unitFailed}`,
);
if (leftover > 0) console.log(`  sandboxes the suite left behind (destroyed by close): ${leftover}`);
for (const { file, name, message } of unexpected) {
  console.log(`  FAILED ${file} :: ${name}\n    ${message.split("\n").slice(0, 3).join("\n    ")}`);
}
for (const { file, name } of stale)
  console.log(`  passes but is on the cannot-apply list: ${file} :: ${name}`);
if (!keep) rmSync(resultsFile, { force: true });
process.exit(counts.failed === 0 && stale.length === 0 ? 0 : 1);
