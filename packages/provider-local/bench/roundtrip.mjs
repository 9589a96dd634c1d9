// Benchmark (not a test): the median round trip of `commands.run("true")` through the sbox client and the
// local provider, against a plain `child_process.spawn("true")` that reads the output pipes to their end
// (what a caller does to get a command's output, which run() returns), and, with bubblewrap, against a bare
// `bwrap <the provider's own arguments> sh -c true` (a string command runs in a shell). Measured in the same
// run, interleaved in a rotating order. Prints ratios and differences.
//
//   pnpm --filter @sbox/provider-local build && node packages/provider-local/bench/roundtrip.mjs
//
// ROUNDS (default 300) sets the number of measured rounds per variant.
import { spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
} from "node:fs";
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

function timeSpawn(file, args, extraFd) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const stdio = ["pipe", "pipe", "pipe"];
    if (extraFd !== undefined) stdio.push(extraFd);
    const child = spawn(file, args, { stdio });
    child.on("error", reject);
    child.stdout.on("data", () => {});
    child.stderr.on("data", () => {});
    child.stdin.end();
    child.on("close", () => resolve(performance.now() - started));
  });
}

/**
 * The exact bubblewrap arguments the provider uses for a command in the sandbox: read from /proc while a
 * `sleep` runs there, with the command replaced by `sh -c true`.
 */
async function providerBwrapArgs(sandbox, id) {
  const running = sandbox.commands.run("sleep 2");
  try {
    for (let i = 0; i < 100; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      for (const name of readdirSync("/proc")) {
        if (!/^\d+$/.test(name)) continue;
        try {
          if (!readlinkSync(`/proc/${name}/exe`).endsWith("/bwrap")) continue;
          const environ = readFileSync(`/proc/${name}/environ`, "utf8");
          if (
            !environ.includes(`SBOX_LOCAL_SANDBOX=${id}\0`) ||
            environ.includes("SBOX_LOCAL_COMMAND=holder-")
          )
            continue;
          const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").slice(1, -1);
          return {
            file: readlinkSync(`/proc/${name}/exe`),
            args: [...argv.slice(0, argv.indexOf("--") + 1), "/bin/sh", "-c", "true"],
          };
        } catch {
          // gone, or not ours
        }
      }
    }
    throw new Error("no bubblewrap process of the sandbox was seen");
  } finally {
    await running;
  }
}

async function measure(isolation, root) {
  const client = createSandboxClient({ provider: local({ root, isolation }) });
  const sandbox = await client.create();
  const id = sandbox.id.slice("local:".length);
  const bare = isolation === "bwrap" ? await providerBwrapArgs(sandbox, id) : undefined;
  // As root the provider joins the sandbox's PID namespace through fd 3; the bare run gets the same fd.
  const holderFile = join(root, id, "holder.json");
  const samples = { run: [], spawn: [], bwrap: [], overRaw: [] };
  const variants = {
    run: async () => {
      const t0 = performance.now();
      const result = await sandbox.commands.run("true");
      const elapsed = performance.now() - t0;
      if (result.exitCode !== 0) throw new Error(`true exited ${result.exitCode}`);
      return elapsed;
    },
    spawn: () => timeSpawn("true", []),
    bwrap: async () => {
      const holder = existsSync(holderFile) ? JSON.parse(readFileSync(holderFile, "utf8")).pid : undefined;
      const fd = holder === undefined ? undefined : openSync(`/proc/${holder}/ns/pid`, "r");
      try {
        return await timeSpawn(bare.file, bare.args, fd);
      } finally {
        if (fd !== undefined) closeSync(fd);
      }
    },
  };
  const order = bare ? ["run", "spawn", "bwrap"] : ["run", "spawn"];
  // The raw call `run` is compared with: bare bubblewrap when isolated, else the plain spawn.
  const raw = bare ? "bwrap" : "spawn";
  try {
    for (let i = 0; i < WARMUP + ROUNDS; i++) {
      // The order rotates every round, so no variant always follows the same one (a bubblewrap run leaves
      // the kernel tearing down its mounts, which would slow whatever comes next).
      const times = {};
      for (let k = 0; k < order.length; k++) {
        const name = order[(i + k) % order.length];
        times[name] = await variants[name]();
      }
      if (i >= WARMUP) {
        for (const name of order) samples[name].push(times[name]);
        samples.overRaw.push(times.run - times[raw]);
      }
    }
  } finally {
    await sandbox.destroy();
    await client.dispose();
  }
  return {
    run: median(samples.run),
    spawn: median(samples.spawn),
    bwrap: bare ? median(samples.bwrap) : 0,
    // Per round, against the raw call of the same round: steadier than the difference of the medians when
    // the machine's load drifts during the run.
    pairedOverhead: median(samples.overRaw),
  };
}

const root = mkdtempSync(join(tmpdir(), "sbox-bench-"));
try {
  const none = await measure("none", join(root, "none"));
  console.log(
    `isolation none : commands.run("true") ${none.run.toFixed(2)} ms, spawn("true") ${none.spawn.toFixed(2)} ms, ratio ${(none.run / none.spawn).toFixed(2)} (median per-round difference +${none.pairedOverhead.toFixed(2)} ms)`,
  );
  const bwrap = await measure("bwrap", join(root, "bwrap"));
  console.log(
    `isolation bwrap: commands.run("true") ${bwrap.run.toFixed(2)} ms, bare bwrap ${bwrap.bwrap.toFixed(2)} ms, spawn("true") ${bwrap.spawn.toFixed(2)} ms; over bare bwrap +${(bwrap.run - bwrap.bwrap).toFixed(2)} ms (median per-round difference +${bwrap.pairedOverhead.toFixed(2)} ms), ratio to spawn ${(bwrap.run / bwrap.spawn).toFixed(2)}`,
  );
  console.log(`(${ROUNDS} rounds each, medians, interleaved; node ${process.version})`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
