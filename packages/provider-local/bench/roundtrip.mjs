// Benchmark (not a test): the median round trip of `commands.run("true")` through the sbox client and the
// local provider, against a plain `child_process.spawn("true")` (and, with bubblewrap, against a bare
// `bwrap ... true` with the same mounts) measured in the same run, interleaved. Prints ratios.
//
//   pnpm --filter @sbox/provider-local build && node packages/provider-local/bench/roundtrip.mjs
//
// ROUNDS (default 300) sets the number of measured rounds per variant.
import { spawn } from "node:child_process";
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSandboxClient } from "@sbox/core";
import { local } from "../dist/index.js";

const ROUNDS = Number(process.env.ROUNDS ?? 300);
const WARMUP = 30;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function timeSpawn(file, args) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: "ignore" });
    child.on("error", reject);
    child.on("exit", () => resolve(performance.now() - started));
  });
}

/** The mounts the provider uses: every top-level host entry read-only, private /tmp and /workspace. */
function bareBwrapArgs(workspace, tmp) {
  const args = [];
  for (const name of readdirSync("/").sort()) {
    if (["proc", "dev", "tmp", "workspace"].includes(name)) continue;
    const path = `/${name}`;
    if (lstatSync(path).isSymbolicLink()) args.push("--symlink", readlinkSync(path), path);
    else args.push("--ro-bind", path, path);
  }
  args.push("--proc", "/proc", "--dev", "/dev", "--bind", tmp, "/tmp", "--bind", workspace, "/workspace");
  args.push("--unshare-pid", "--die-with-parent");
  if (process.getuid?.() === 0) args.push("--cap-drop", "ALL");
  args.push("--chdir", "/workspace", "--", "true");
  return args;
}

async function measure(isolation, root) {
  const client = createSandboxClient({ provider: local({ root, isolation }) });
  const sandbox = await client.create();
  const scratch = mkdtempSync(join(tmpdir(), "sbox-bench-bare-"));
  mkdirSync(join(scratch, "w"));
  mkdirSync(join(scratch, "t"));
  const bare = bareBwrapArgs(join(scratch, "w"), join(scratch, "t"));
  const samples = { run: [], spawn: [], bwrap: [] };
  try {
    for (let i = 0; i < WARMUP + ROUNDS; i++) {
      const keep = i >= WARMUP;
      const t0 = performance.now();
      const result = await sandbox.commands.run("true");
      const run = performance.now() - t0;
      if (result.exitCode !== 0) throw new Error(`true exited ${result.exitCode}`);
      const plain = await timeSpawn("true", []);
      const wrapped = isolation === "bwrap" ? await timeSpawn("bwrap", bare) : 0;
      if (keep) {
        samples.run.push(run);
        samples.spawn.push(plain);
        samples.bwrap.push(wrapped);
      }
    }
  } finally {
    await sandbox.destroy();
    await client.dispose();
    rmSync(scratch, { recursive: true, force: true });
  }
  return { run: median(samples.run), spawn: median(samples.spawn), bwrap: median(samples.bwrap) };
}

const root = mkdtempSync(join(tmpdir(), "sbox-bench-"));
try {
  const none = await measure("none", join(root, "none"));
  console.log(
    `isolation none : commands.run("true") ${none.run.toFixed(2)} ms, spawn("true") ${none.spawn.toFixed(2)} ms, ratio ${(none.run / none.spawn).toFixed(2)}`,
  );
  const bwrap = await measure("bwrap", join(root, "bwrap"));
  console.log(
    `isolation bwrap: commands.run("true") ${bwrap.run.toFixed(2)} ms, bare bwrap ${bwrap.bwrap.toFixed(2)} ms, spawn("true") ${bwrap.spawn.toFixed(2)} ms; over bare bwrap +${(bwrap.run - bwrap.bwrap).toFixed(2)} ms, ratio to spawn ${(bwrap.run / bwrap.spawn).toFixed(2)}`,
  );
  console.log(`(${ROUNDS} rounds each, medians, interleaved; node ${process.version})`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
