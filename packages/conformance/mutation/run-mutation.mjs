#!/usr/bin/env node
/**
 * `pnpm --filter @sbox/conformance mutation [--only id,...] [--area example,E2,...] [--full] [--list]
 *  [--update-readme] [--keep]`
 *
 * Measures the kit the way test suites are measured: every mutant of the catalogue (mutants.mjs) is one
 * deliberate bug, a search/replace on one named file of the example adapter or the core. For each, the
 * script copies the sources (core, kit, example) into a scratch tree, applies the mutant there (the
 * repository is never written), bundles the kit's runner with esbuild and runs the cases the mutant
 * names against the configurations it names (with `--full`, every case). A mutant is
 *
 *   killed    when at least one case fails,
 *   survived  when every case passes (the kit missed the bug),
 *   stale     when its search text is no longer in the file exactly once (the code moved: re-anchor it),
 *   invalid   when the mutated tree does not build or the runner crashes (a broken mutant proves nothing).
 *
 * Equivalent mutants (no observable difference, with the reason) are listed and not run. The score is
 * killed / (every other mutant): stale and invalid ones count against it until they are fixed. An
 * unmutated baseline runs first; when it fails, no score is given. CPU heavy: run outside CI, and on a
 * shared machine with `--area example` or `--only` while developing.
 */
import { spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { build } from "esbuild";
import { EQUIVALENT, MUTANTS } from "./mutants.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../../..");
const conformanceDir = resolve(here, "..");
/** The trees a mutant can touch and the harness needs, copied as they are (sources only). */
const COPIED = [
  "packages/core/src",
  "packages/conformance/src",
  "packages/conformance/test/fixtures",
  "packages/conformance/mutation/mutation-harness.ts",
  "examples/minimal-sh-provider/src",
];
const HARNESS = "packages/conformance/mutation/mutation-harness.ts";
/** A mutant's own run may take this long (one kit run per configuration, only its cases). */
const RUN_TIMEOUT_MS = 15 * 60_000;
const README = join(conformanceDir, "README.md");
const SCORE_START = "<!-- mutation-score:start -->";
const SCORE_END = "<!-- mutation-score:end -->";

const { values } = parseArgs({
  options: {
    only: { type: "string" },
    area: { type: "string" },
    full: { type: "boolean", default: false },
    list: { type: "boolean", default: false },
    "update-readme": { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
  },
});

const log = (line) => process.stdout.write(`${line}\n`);

function selected() {
  const ids = values.only
    ?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const areas = values.area
    ?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const id of ids ?? []) {
    if (!MUTANTS.some((m) => m.id === id))
      throw new Error(`--only names ${id}, which is not a mutant of the catalogue`);
  }
  return MUTANTS.filter((m) => (!ids || ids.includes(m.id)) && (!areas || areas.includes(m.area)));
}

function checkCatalogue() {
  const seen = new Set();
  for (const m of [...MUTANTS, ...EQUIVALENT]) {
    if (typeof m.replace !== "string")
      throw new Error(`mutant ${m.id ?? "?"} lacks replace (a string, "" to delete)`);
    for (const field of ["id", "area", "file", "search", "bug"]) {
      if (typeof m[field] !== "string" || m[field].length === 0)
        throw new Error(`mutant ${m.id ?? "?"} lacks ${field}`);
    }
    if (seen.has(m.id)) throw new Error(`two mutants share the id ${m.id}`);
    seen.add(m.id);
    if (m.search === m.replace) throw new Error(`mutant ${m.id} replaces its search text by itself`);
    if (!existsSync(join(repo, m.file)))
      throw new Error(`mutant ${m.id} names ${m.file}, which does not exist`);
  }
  for (const m of MUTANTS) {
    if (!Array.isArray(m.cases) || m.cases.length === 0) throw new Error(`mutant ${m.id} names no case`);
    if (!Array.isArray(m.targets) || m.targets.length === 0)
      throw new Error(`mutant ${m.id} names no target`);
  }
  for (const m of EQUIVALENT) {
    if (typeof m.equivalent !== "string" || m.equivalent.length < 20)
      throw new Error(`equivalent mutant ${m.id} needs the reason it cannot be caught`);
  }
}

/** How often `needle` occurs in `text`. */
function occurrences(text, needle) {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count++;
  return count;
}

/** A fresh copy of the sources under `dir`. */
function copySources(dir) {
  rmSync(dir, { recursive: true, force: true });
  for (const part of COPIED) cpSync(join(repo, part), join(dir, part), { recursive: true });
}

/** Applies a mutant in the copy; `stale` when its search text is not in the file exactly once. */
function applyMutant(dir, mutant) {
  const path = join(dir, mutant.file);
  const text = readFileSync(path, "utf8");
  const found = occurrences(text, mutant.search);
  if (found !== 1) return { stale: `search text found ${found} times in ${mutant.file}` };
  writeFileSync(
    path,
    text.replace(mutant.search, () => mutant.replace),
  );
  return {};
}

/** Bundles the harness of the copy; the core's imports resolve to the copy's sources. */
async function bundle(dir) {
  const out = join(dir, "harness.mjs");
  await build({
    entryPoints: [join(dir, HARNESS)],
    outfile: out,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "silent",
    alias: {
      "@sbox/core/spec": join(dir, "packages/core/src/spec/index.ts"),
      "@sbox/core": join(dir, "packages/core/src/index.ts"),
    },
    // vitest is only imported by the kit's vitest binding, which the harness does not use.
    external: ["vitest"],
  });
  return out;
}

/** Every process whose working directory or HOME is under `base`: what the mutant's sandboxes started. */
function processesUnder(base) {
  const found = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cwd = readlinkSync(`/proc/${name}/cwd`);
      const environ = readFileSync(`/proc/${name}/environ`, "latin1").split("\0");
      if (cwd.startsWith(`${base}/`) || environ.some((entry) => entry.startsWith(`HOME=${base}/`)))
        found.push(Number(name));
    } catch {
      // exited, or not ours to read
    }
  }
  return found;
}

/** Ends what a mutant left running under `base` (only processes of its own sandboxes). */
function endLeftovers(base) {
  let ended = 0;
  for (let pass = 0; pass < 3; pass++) {
    const pids = processesUnder(base);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
        ended++;
      } catch {
        // gone
      }
    }
  }
  return ended;
}

/** Runs the bundled harness; resolves with one parsed line per target, or an error text. */
function runHarness(bundled, input) {
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, [bundled, JSON.stringify(input)], {
      cwd: dirname(bundled),
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (b) => (stdout += b));
    child.stderr.on("data", (b) => (stderr = (stderr + b).slice(-4000)));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
    }, RUN_TIMEOUT_MS);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const lines = stdout
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l));
      resolveRun({ lines, code, signal, stderr });
    });
  });
}

/** Runs `cases` on `targets` in the tree at `dir`: killed (with the failing cases), survived or invalid. */
async function evaluate(dir, cases, targets) {
  let bundled;
  try {
    bundled = await bundle(dir);
  } catch (error) {
    return {
      status: "invalid",
      detail: `the mutated tree does not build: ${String(error.message ?? error).split("\n")[0]}`,
    };
  }
  const rootBase = mkdtempSync(join(dir, "roots-"));
  const started = Date.now();
  const run = await runHarness(bundled, { rootBase, targets, only: cases });
  const leftovers = endLeftovers(rootBase);
  const ms = Date.now() - started;
  const broken = run.lines.filter((l) => l.error);
  if (broken.length > 0 || run.lines.length !== targets.length) {
    return {
      status: "invalid",
      ms,
      leftovers,
      detail:
        broken.map((l) => `${l.target}: ${l.error}`).join("; ") ||
        `the runner ended (${run.signal ?? run.code}) after ${run.lines.length} of ${targets.length} configurations: ${run.stderr.trim().split("\n").slice(-3).join(" | ")}`,
    };
  }
  const failed = run.lines.flatMap((l) => l.failed.map((f) => ({ target: l.target, ...f })));
  if (failed.length > 0) return { status: "killed", ms, leftovers, failed };
  return {
    status: "survived",
    ms,
    leftovers,
    passed: run.lines.map((l) => `${l.target}: ${l.passed} passed`).join(", "),
  };
}

function scoreLine(results, total) {
  const killed = results.filter((r) => r.status === "killed").length;
  return { killed, total, percent: total === 0 ? 0 : Math.round((killed / total) * 1000) / 10 };
}

async function main() {
  checkCatalogue();
  const mutants = selected();
  if (values.list) {
    for (const m of mutants)
      log(`${m.id} [${m.area}] ${m.file}: ${m.bug}${m.reanchor ? ` (re-anchor after ${m.reanchor})` : ""}`);
    log(`\n${mutants.length} mutants, ${EQUIVALENT.length} equivalent (not run):`);
    for (const m of EQUIVALENT) log(`${m.id} [${m.area}] ${m.file}: ${m.bug} -- equivalent: ${m.equivalent}`);
    return;
  }
  const work = mkdtempSync(join(tmpdir(), "sbox-mutation-"));
  const tree = join(work, "tree");
  const started = Date.now();
  try {
    // The unmutated tree must pass what the mutants will be judged by, or a kill proves nothing.
    const baselineCases = values.full ? [] : [...new Set(mutants.flatMap((m) => m.cases))];
    const baselineTargets = [...new Set(mutants.flatMap((m) => m.targets))];
    log(
      `baseline: ${baselineCases.length === 0 ? "every case" : `${baselineCases.length} case prefixes`} on ${baselineTargets.join(", ")}`,
    );
    copySources(tree);
    const baseline = await evaluate(tree, baselineCases, baselineTargets);
    if (baseline.status !== "survived") {
      log(
        `baseline FAILED (${baseline.status}): ${baseline.detail ?? baseline.failed.map((f) => `${f.target} ${f.id}: ${f.reason}`).join("\n  ")}`,
      );
      log("no score: the kit does not pass on the unmutated sources");
      process.exitCode = 2;
      return;
    }
    log(`baseline passed in ${Math.round(baseline.ms / 1000)} s (${baseline.passed})\n`);
    const results = [];
    for (const [index, mutant] of mutants.entries()) {
      copySources(tree);
      const applied = applyMutant(tree, mutant);
      let result;
      if (applied.stale) result = { status: "stale", detail: applied.stale };
      else result = await evaluate(tree, values.full ? [] : mutant.cases, mutant.targets);
      results.push({ id: mutant.id, ...result });
      const what =
        result.status === "killed"
          ? `killed by ${[...new Set(result.failed.map((f) => f.id))].join(", ")}`
          : result.status === "survived"
            ? `SURVIVED (${result.passed})`
            : `${result.status.toUpperCase()}: ${result.detail}`;
      log(
        `[${index + 1}/${mutants.length}] ${mutant.id}: ${what}${result.ms ? ` (${Math.round(result.ms / 1000)} s)` : ""}${result.leftovers ? `, ended ${result.leftovers} leftover processes` : ""}`,
      );
    }
    const score = scoreLine(results, mutants.length);
    const date = new Date().toISOString().slice(0, 10);
    log(
      `\nmutation score: ${score.killed}/${score.total} killed (${score.percent}%) on ${date}, ${Math.round((Date.now() - started) / 60_000)} min`,
    );
    for (const status of ["survived", "stale", "invalid"]) {
      const ids = results.filter((r) => r.status === status).map((r) => r.id);
      if (ids.length > 0) log(`${status}: ${ids.join(", ")}`);
    }
    log(`equivalent (not run, not counted): ${EQUIVALENT.map((m) => m.id).join(", ")}`);
    if (values["update-readme"]) {
      if (values.only || values.area)
        throw new Error("--update-readme needs the whole catalogue (no --only, no --area)");
      const block = `${SCORE_START}\n**Mutation score: ${score.killed}/${score.total} mutants killed (${score.percent}%)**, measured ${date} with \`pnpm --filter @sbox/conformance mutation\` (${EQUIVALENT.length} equivalent mutants listed apart, not counted).\n${SCORE_END}`;
      const readme = readFileSync(README, "utf8");
      const start = readme.indexOf(SCORE_START);
      const end = readme.indexOf(SCORE_END);
      if (start === -1 || end === -1)
        throw new Error(`README.md has no ${SCORE_START} ... ${SCORE_END} block`);
      writeFileSync(README, `${readme.slice(0, start)}${block}${readme.slice(end + SCORE_END.length)}`);
      log(`wrote the score into ${relative(process.cwd(), README)}`);
    }
    if (score.killed < score.total) process.exitCode = 1;
  } finally {
    if (!values.keep) rmSync(work, { recursive: true, force: true });
    else log(`kept ${work}`);
  }
}

await main();
