// Benchmark (not a test): the median round trip of `commands.run("true")` through the sbox client and the
// local provider, against the raw calls it is made of, measured in the same run, interleaved in a rotating
// order:
//
// - without isolation, a plain `child_process.spawn("true")` that reads the output pipes to their end (what a
//   caller does to get a command's output, which run() returns);
// - with bubblewrap, the provider's own launch chain run bare: the same `sh` (cgroup join, limits),
//   `nsenter` (the sandbox's namespaces) and `bwrap` (the same options, argument file and syscall filter,
//   copied from a command of the provider while it runs) with `sh -c true`, spawned directly. What run()
//   adds over it is the provider's cost. The namespaces' own cost is measured apart: `nsenter <the same
//   namespaces> true` against `spawn("true")`, and the same bubblewrap without joining any.
//
//   pnpm --filter @sbox/provider-local build && node packages/provider-local/bench/roundtrip.mjs
//
// ROUNDS (default 300) sets the number of measured rounds per variant.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
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
    const child = spawn(file, args, {
      stdio: ["pipe", "pipe", "pipe"],
      env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
    });
    child.on("error", reject);
    let stderr = "";
    child.stdout.on("data", () => {});
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.stdin.end();
    child.on("close", (code) => {
      if (code !== 0) reject(new Error(`${file} exited ${code}: ${stderr}`));
      else resolve(performance.now() - started);
    });
  });
}

const quote = (value) => `'${value.replaceAll("'", "'\\''")}'`;

/**
 * The launch chain the provider runs for a command of the sandbox: read from /proc while a `sleep` runs
 * there (nsenter's command line, and the argument file and filter it holds open as fds 6 and 7), with the
 * cgroup join and limits its `sh` did before becoming nsenter rebuilt from the sandbox's own records.
 */
async function providerChain(sandbox, id, root) {
  const running = sandbox.commands.run("sleep 2");
  try {
    for (let i = 0; i < 100; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      for (const name of readdirSync("/proc")) {
        if (!/^\d+$/.test(name)) continue;
        try {
          if (!readlinkSync(`/proc/${name}/exe`).endsWith("/nsenter")) continue;
          const environ = readFileSync(`/proc/${name}/environ`, "utf8");
          if (!environ.includes(`SBOX_LOCAL_SANDBOX=${id}\0`)) continue;
          const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").slice(0, -1);
          const bwrapAt = argv.findIndex((word) => word.endsWith("/bwrap"));
          const dir = mkdtempSync(join(tmpdir(), "sbox-bench-chain-"));
          writeFileSync(join(dir, "args"), readFileSync(`/proc/${name}/fd/6`));
          writeFileSync(join(dir, "seccomp"), readFileSync(`/proc/${name}/fd/7`));
          return {
            dir,
            nsenter: argv.slice(0, bwrapAt),
            bwrap: argv[bwrapAt],
            userns: argv.some((word) => word.startsWith("--user="))
              ? undefined
              : /--mount=\/proc\/(\d+)\//.exec(argv.join(" "))?.[1],
            record: JSON.parse(readFileSync(join(root, id, "sandbox.json"), "utf8")),
            cgroup: (() => {
              try {
                return JSON.parse(readFileSync(join(root, id, "cgroup.json"), "utf8"));
              } catch {
                return undefined;
              }
            })(),
          };
        } catch {
          // gone, or not ours
        }
      }
    }
    throw new Error("no launcher of the sandbox was seen");
  } finally {
    await running;
  }
}

/** `sh -c PREFIX` the way the provider's launcher does it (see local-launch.ts), for the bare chain. */
function bareChain(chain) {
  const lines = [];
  if (chain.userns) lines.push(`exec 3</proc/${chain.userns}/ns/user`);
  lines.push(`exec 6<${quote(join(chain.dir, "args"))}`, `exec 7<${quote(join(chain.dir, "seccomp"))}`);
  if (chain.cgroup?.kind === "v1") {
    for (const [controller, dir] of Object.entries(chain.cgroup.dirs)) {
      lines.push(
        `echo $$ >${quote(controller === "pids" ? `${dir}/c-bench/cgroup.procs` : `${dir}/cgroup.procs`)}`,
      );
    }
  } else if (chain.cgroup?.kind === "v2") {
    lines.push(`echo $$ >${quote(`${chain.cgroup.dir}/c-bench/cgroup.procs`)}`);
  }
  lines.push(`ulimit -f ${Math.floor((chain.record.resources?.diskMB ?? 1024) * 2048)}`, 'exec "$@"');
  return [
    "/bin/sh",
    [
      "-c",
      lines.join("\n"),
      "bench",
      ...chain.nsenter,
      chain.bwrap,
      "--args",
      "6",
      "--",
      "/bin/sh",
      "-c",
      "true",
    ],
  ];
}

async function measure(isolation, root) {
  const client = createSandboxClient({ provider: local({ root, isolation }) });
  const sandbox = await client.create({ network: { egress: "block-all" } }).catch(() => client.create());
  const id = sandbox.id.slice("local:".length);
  const chain = isolation === "bwrap" ? await providerChain(sandbox, id, root) : undefined;
  if (chain?.cgroup) {
    const { mkdirSync } = await import("node:fs");
    const parent = chain.cgroup.kind === "v1" ? chain.cgroup.dirs.pids : chain.cgroup.dir;
    mkdirSync(`${parent}/c-bench`, { recursive: true });
  }
  const samples = { run: [], spawn: [], chain: [], nsenter: [], overRaw: [] };
  const variants = {
    run: async () => {
      const t0 = performance.now();
      const result = await sandbox.commands.run("true");
      const elapsed = performance.now() - t0;
      if (result.exitCode !== 0) throw new Error(`true exited ${result.exitCode}`);
      return elapsed;
    },
    spawn: () => timeSpawn("true", []),
    chain: () => {
      const [file, args] = bareChain(chain);
      return timeSpawn(file, args);
    },
    // Joining the sandbox's namespaces alone (nsenter forks into the PID namespace, then runs true).
    nsenter: () => timeSpawn(chain.nsenter[0], [...chain.nsenter.slice(1), "/bin/true"]),
  };
  const order = chain ? ["run", "spawn", "chain", "nsenter"] : ["run", "spawn"];
  // The raw call `run` is compared with: the bare chain when isolated, else the plain spawn.
  const raw = chain ? "chain" : "spawn";
  try {
    for (let i = 0; i < WARMUP + ROUNDS; i++) {
      // The order rotates every round, so no variant always follows the same one.
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
    if (chain) rmSync(chain.dir, { recursive: true, force: true });
  }
  return {
    run: median(samples.run),
    spawn: median(samples.spawn),
    chain: chain ? median(samples.chain) : 0,
    nsenter: chain ? median(samples.nsenter) : 0,
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
    `isolation bwrap: commands.run("true") ${bwrap.run.toFixed(2)} ms, the same launch chain bare ${bwrap.chain.toFixed(2)} ms; over it +${(bwrap.run - bwrap.chain).toFixed(2)} ms (median per-round difference +${bwrap.pairedOverhead.toFixed(2)} ms)`,
  );
  console.log(
    `                 the namespaces' own cost: nsenter into them + true ${bwrap.nsenter.toFixed(2)} ms against spawn("true") ${bwrap.spawn.toFixed(2)} ms (+${(bwrap.nsenter - bwrap.spawn).toFixed(2)} ms)`,
  );
  console.log(
    `(${ROUNDS} rounds each, medians, interleaved; node ${process.version}; uid ${process.getuid?.()})`,
  );
} finally {
  rmSync(root, { recursive: true, force: true });
}
