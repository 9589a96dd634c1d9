#!/usr/bin/env node
// Runs the E2B JS SDK's own test suite (e2b-dev/E2B, packages/js-sdk/tests) unchanged against the E2B
// emulator and compares the outcome with the checked-in list of tests that cannot apply offline.
//
//   pnpm --filter @sbox/emulators build
//   pnpm --filter @sbox/emulators fidelity:e2b -- /path/to/E2B [--backend docker|local] [--files a,b] [--keep]
//
// The checkout is one the developer brought (for example with the `fetch` tool: `fetch github:e2b-dev/E2B`);
// nothing of it is committed here. Its `packages/js-sdk` (sources and tests) is copied into a scratch
// directory under the system temp dir, the SDK's own dependencies are installed there from the npm
// registry, and vitest runs the SDK's `unit` project (every tests/**/*.test.ts except the runtimes, the
// template builds and connectionConfig, as the SDK's vitest.config.mts defines it) with E2B_DOMAIN and
// E2B_API_KEY set as for e2b.app. A setup file of this harness (not of the SDK) plays E2B's DNS: it sends
// `api.<domain>` and the public sandbox hosts (`<port>-<id>.<domain>`) to the emulator's two ports.
//
// Exit status: 0 when every test passes except those on fidelity/e2b-cannot-apply.json, 1 otherwise.
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";

const here = import.meta.dirname;
/** The commit of e2b-dev/E2B this harness and its cannot-apply list were written against. */
const EXPECTED_COMMIT = "b8029973aa7da5f741f7bb1a9f833b38a0885438";

function usage(message) {
  if (message) console.error(`e2b-fidelity: ${message}`);
  console.error(
    "usage: e2b-fidelity.mjs <path to an E2B checkout> [--backend docker|local] [--files f1,f2] [--keep]",
  );
  process.exit(2);
}

const args = process.argv.slice(2).filter((a) => a !== "--");
let checkout;
let backend = "docker";
let files = [];
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
if (!checkout) usage("the path of an E2B checkout is required");
const sdk = join(checkout, "packages", "js-sdk");
if (!existsSync(join(sdk, "package.json")) || !existsSync(join(sdk, "tests"))) {
  usage(`${checkout} is not an E2B checkout (no packages/js-sdk/tests)`);
}

function gitCommit(dir) {
  const run = spawnSync("git", ["-C", dir, "rev-parse", "HEAD"], { encoding: "utf8" });
  if (run.status === 0) return run.stdout.trim();
  // A mirror without a work tree: the caller may pass the bare repo's path.
  const bare = spawnSync("git", ["--git-dir", dir, "rev-parse", "HEAD"], { encoding: "utf8" });
  return bare.status === 0 ? bare.stdout.trim() : undefined;
}
const commit = gitCommit(checkout);
if (commit !== EXPECTED_COMMIT) {
  console.warn(
    `e2b-fidelity: the checkout is at ${commit ?? "an unknown commit"}, the cannot-apply list was written for ${EXPECTED_COMMIT}; results may differ`,
  );
}

// --- scratch copy of the SDK with its dependencies --------------------------------------------------------
const vendorPackage = JSON.parse(readFileSync(join(sdk, "package.json"), "utf8"));
const devWanted = ["msw", "error-stack-parser-es"];
const dependencies = { ...vendorPackage.dependencies };
for (const name of devWanted) dependencies[name] = vendorPackage.devDependencies?.[name] ?? "*";
// The test runner is pinned to what this repository uses (the SDK allows any 4.1.x).
dependencies.vitest = "4.1.12";
const depsHash = createHash("sha256").update(JSON.stringify(dependencies)).digest("hex").slice(0, 12);
const work = join(tmpdir(), "sbox-e2b-fidelity", (commit ?? "unknown").slice(0, 12));
mkdirSync(work, { recursive: true });
for (const part of ["src", "tests"]) {
  rmSync(join(work, part), { recursive: true, force: true });
  cpSync(join(sdk, part), join(work, part), { recursive: true });
}
cpSync(join(sdk, "tsconfig.json"), join(work, "tsconfig.json"));
writeFileSync(
  join(work, "package.json"),
  JSON.stringify({ name: "sbox-e2b-fidelity-run", private: true, type: "module", dependencies }, null, 2),
);
if (readFileSync(join(work, ".deps-hash"), { encoding: "utf8", flag: "a+" }) !== depsHash) {
  console.log(`e2b-fidelity: installing the SDK's dependencies in ${work} (once per dependency set)`);
  const install = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd: work,
    stdio: "inherit",
  });
  if (install.status !== 0) {
    console.error("e2b-fidelity: npm install failed");
    process.exit(1);
  }
  writeFileSync(join(work, ".deps-hash"), depsHash);
}

// --- this harness's vitest configuration and setup file ---------------------------------------------------
writeFileSync(
  join(work, "sbox-fidelity-routing.mjs"),
  `// Written by sbox's e2b-fidelity harness: resolves E2B's public hosts under E2B_DOMAIN to the emulator, as
// E2B's DNS does for e2b.app: api.<domain> is the control plane, <port>-<id>.<domain> the sandbox proxy.
// Plain HTTP on the emulator's ports (it speaks no TLS); every other host goes out unchanged.
import { connect } from "node:net";
import { Agent, buildConnector, fetch as undiciFetch } from "undici";

const domain = process.env.E2B_DOMAIN;
const api = new URL(process.env.SBOX_E2B_API_URL);
const sandboxes = new URL(process.env.SBOX_E2B_SANDBOX_URL);
const direct = buildConnector({});
const ours = (hostname) => Boolean(domain) && (hostname === "api." + domain || hostname.endsWith("." + domain));
const dispatcher = new Agent({
  connect(options, callback) {
    if (!ours(options.hostname)) return direct(options, callback);
    const target = options.hostname === "api." + domain ? api : sandboxes;
    const socket = connect({ host: target.hostname, port: Number(target.port) });
    socket.once("connect", () => callback(null, socket));
    socket.once("error", (error) => callback(error, null));
  },
});
const original = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
  if (!ours(url.hostname)) return original(input, init);
  // Node's own Request is not the undici package's: hand its parts over.
  const request = new Request(input, init);
  return undiciFetch(request.url, {
    method: request.method,
    headers: request.headers,
    body: request.body,
    duplex: "half",
    signal: request.signal,
    redirect: request.redirect,
    dispatcher,
  });
};
`,
);
writeFileSync(
  join(work, "vitest.fidelity.config.mjs"),
  `// Written by sbox's e2b-fidelity harness: the SDK's own "unit" project (tests/**/*.test.ts minus runtimes,
// template builds and connectionConfig, same setup file, isolation and timeout), plus host routing.
import { defineConfig } from "vitest/config";
export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    exclude: ["tests/runtimes/**", "tests/template/**", "tests/connectionConfig.test.ts"],
    isolate: true,
    globals: false,
    testTimeout: 30_000,
    environment: "node",
    bail: 0,
    setupFiles: ["./sbox-fidelity-routing.mjs", "tests/globalFetchFallback.setup.ts"],
    deps: { interopDefault: true },
    maxWorkers: 2,
  },
});
`,
);

// --- the emulator and the run -------------------------------------------------------------------------------
const { startE2BEmulator } = await import(join(here, "..", "dist", "e2b", "index.js")).catch((error) => {
  console.error(
    `e2b-fidelity: build the package first (pnpm --filter @sbox/emulators build): ${error.message}`,
  );
  process.exit(1);
});
const emulator = await startE2BEmulator({ backend });
console.log(
  `e2b-fidelity: emulator on ${emulator.url} (sandboxes ${emulator.sandboxUrl}, backend ${emulator.backend})`,
);
const resultsFile = join(work, "results.json");
rmSync(resultsFile, { force: true });
const started = Date.now();
// As against e2b.app: only the domain and the key are set, the SDK derives every URL from the domain (its
// mocked suites expect exactly that), and the routing setup file above plays DNS.
const env = {
  ...process.env,
  E2B_DOMAIN: emulator.domain,
  E2B_API_KEY: emulator.apiKey,
  SBOX_E2B_API_URL: emulator.url,
  SBOX_E2B_SANDBOX_URL: emulator.sandboxUrl,
};
for (const name of ["E2B_DEBUG", "E2B_API_URL", "E2B_SANDBOX_URL", "E2B_ACCESS_TOKEN"]) delete env[name];
// Asynchronously: the emulator serves from this very process while vitest runs.
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
      ...files,
    ],
    { cwd: work, env, stdio: "inherit" },
  );
  run.on("exit", (status) => resolveRun({ status }));
});
const seconds = ((Date.now() - started) / 1000).toFixed(0);
const leftover = emulator.sandboxIds().length;
if (process.env.SBOX_FIDELITY_DEBUG) {
  for (const entry of emulator.log) {
    console.log(
      `  ${entry.at.toISOString()} ${entry.method} ${entry.route ?? entry.path} -> ${entry.status ?? "open"} ${entry.ms ?? "?"}ms`,
    );
  }
}
await emulator.close();
if (!existsSync(resultsFile)) {
  console.error(`e2b-fidelity: vitest wrote no results (exit ${child.status})`);
  process.exit(1);
}

// --- compare with the cannot-apply list ---------------------------------------------------------------------
// An entry naming `backends` holds only on those: on the others its test must pass.
const cannotApply = JSON.parse(readFileSync(join(here, "e2b-cannot-apply.json"), "utf8")).tests.filter(
  (entry) => entry.backends === undefined || entry.backends.includes(backend),
);
const listed = (file, name) =>
  cannotApply.find((entry) => entry.file === file && (entry.test === undefined || entry.test === name));
const results = JSON.parse(readFileSync(resultsFile, "utf8"));
const counts = { total: 0, passed: 0, failed: 0, skipped: 0, cannotApply: 0 };
const unexpected = [];
const stale = [];
for (const suite of results.testResults ?? []) {
  const file = relative(join(work, "tests"), suite.name);
  if ((suite.assertionResults ?? []).length === 0 && suite.status === "failed") {
    const entry = listed(file, undefined);
    counts.total++;
    if (entry) counts.cannotApply++;
    else {
      counts.failed++;
      unexpected.push({ file, name: "(file failed to load)", message: suite.message ?? "" });
    }
    continue;
  }
  for (const test of suite.assertionResults ?? []) {
    const name = test.fullName ?? [...(test.ancestorTitles ?? []), test.title].join(" ");
    counts.total++;
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
    } else {
      counts.skipped++;
    }
  }
}
console.log("");
console.log(`e2b-fidelity: E2B ${commit?.slice(0, 12) ?? "?"}, backend ${backend}, ${seconds} s`);
console.log(
  `  ${counts.total} tests: ${counts.passed} passed, ${counts.cannotApply} on the cannot-apply list, ${counts.failed} failed unexpectedly, ${counts.skipped} skipped`,
);
for (const failure of unexpected) {
  console.log(`  FAIL ${failure.file} > ${failure.name}`);
  const first = failure.message.split("\n").find((line) => line.trim() !== "") ?? "";
  console.log(`       ${first.slice(0, 300)}`);
}
for (const entry of stale)
  console.log(`  PASSES although listed as cannot-apply: ${entry.file} > ${entry.name}`);
if (leftover > 0)
  console.log(`  ${leftover} sandboxes were still alive when the run ended (destroyed by the emulator)`);
writeFileSync(
  join(work, "summary.json"),
  JSON.stringify({ commit, backend, seconds, counts, unexpected, stale }, null, 2),
);
console.log(`  details: ${join(work, "summary.json")}`);
if (!keep) rmSync(resultsFile, { force: true });
process.exit(unexpected.length === 0 ? 0 : 1);
