// Benchmark (not a test): the median round trip of `commands.run("true")` through the sbox client and the
// local provider, against the raw calls it is made of, measured in the same run, interleaved in a rotating
// order:
//
// - without isolation, a plain `child_process.spawn("true")` that reads the output pipes to their end (what a
//   caller does to get a command's output, which run() returns);
// - with bubblewrap, the provider's own launch chain run bare: the same `sh` (cgroup join, limits),
//   `nsenter` (the sandbox's namespaces) and `bwrap` (the same options and syscall filter, copied from a
//   command of the provider while it runs, the options read from a file) with `sh -c true`, spawned directly. What run()
//   adds over it is the provider's cost. Against bare bubblewrap with the same isolation arguments: one
//   `bwrap` with the holder's namespaces and view (read from its command line) and the command's own options
//   (user namespace, ids, capabilities, syscall filter, environment), making them fresh for each command the
//   way a program using bubblewrap directly does. The extra namespaces' own cost is measured apart:
//   `nsenter <the same namespaces> true` against `spawn("true")`.
//
//   pnpm --filter @sbox/provider-local build && node packages/provider-local/bench/roundtrip.mjs
//
// ROUNDS (default 300) sets the number of measured rounds per variant; DISK_IMAGE=false makes the sandboxes
// without a disk image (as root a loop device, unprivileged fuse2fs), to compare.
import { spawn, spawnSync } from "node:child_process";
import {
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSandboxClient } from "@sbox/core";
import { local } from "../dist/index.js";

const ROUNDS = Number(process.env.ROUNDS ?? 300);
/** DISK_IMAGE=false: sandboxes without their disk image (to compare the round trip with and without one). */
const DISK_IMAGE = process.env.DISK_IMAGE === "false" ? false : undefined;
const WARMUP = 30;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function timeSpawn(file, args, files = []) {
  const started = performance.now();
  // Extra descriptors from 6 on (bubblewrap's argument file and syscall filter), opened per spawn.
  const fds = files.map((path) => openSync(path, "r"));
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      stdio: ["pipe", "pipe", "pipe", ...(fds.length ? ["ignore", "ignore", "ignore", ...fds] : [])],
      env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
    });
    child.on("error", reject);
    let stderr = "";
    child.stdout.on("data", () => {});
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.stdin.end();
    for (const fd of fds) closeSync(fd);
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
  // A background command: its launcher reads its arguments from a file (a foreground one gets them through a
  // pipe, which /proc cannot copy); the arguments are the same.
  const running = sandbox.commands.spawn("sleep 2").then((handle) => handle.wait());
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
            holder: holderIsolation(id, join(root, id)),
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

/**
 * The isolation arguments of the sandbox's holder (its bubblewrap's namespaces and filesystem view), read from
 * its command line: up to `--cap-drop`, which starts what the holder itself runs (`--info-fd`, `--`, sleep).
 */
function holderIsolation(id, dir) {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (!readlinkSync(`/proc/${name}/exe`).endsWith("/bwrap")) continue;
      const environ = readFileSync(`/proc/${name}/environ`, "utf8");
      if (!environ.includes(`SBOX_LOCAL_COMMAND=holder-${id}\0`)) continue;
      const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").slice(0, -1);
      // Unprivileged the holder maps uid 0 to the host user (its commands nest their own user namespace).
      // A holder started staged (see local-holder-stage.ts) names its sandbox's directory where it bound it.
      const options = argv
        .slice(1, argv.indexOf("--cap-drop"))
        .map((word) => (word.startsWith("/dev/shm/sandbox/") ? join(dir, word.slice(17)) : word));
      const userAt = options.indexOf("--unshare-user");
      return userAt === -1 ? options : [...options.slice(0, userAt), ...options.slice(userAt + 5)];
    } catch {
      // gone, or not ours
    }
  }
  throw new Error("the sandbox's holder was not found");
}

/**
 * Bare bubblewrap with the same isolation as a command of the sandbox, in one process, the way a program that
 * uses bubblewrap directly runs a command: the holder's namespaces and view, made fresh for the command, and
 * the command's own options (user namespace and ids, capabilities dropped, syscall filter, environment).
 */
function bareBwrap(chain) {
  const commandOptions = readFileSync(join(chain.dir, "args"), "utf8").split("\0").slice(0, -1);
  const own = [];
  for (let i = 0; i < commandOptions.length; i++) {
    const word = commandOptions[i];
    // The view is the holder's here; the user namespace is made, not joined.
    if (word === "--bind" || word === "--dev-bind") i += 2;
    else if (word === "--userns") i += 1;
    else if (word === "--unshare-user") continue;
    else own.push(word);
  }
  const args = ["--unshare-user", ...chain.holder, ...own];
  writeFileSync(join(chain.dir, "bare-args"), `${args.join("\0")}\0`);
  return [chain.bwrap, ["--args", "6", "--", "/bin/sh", "-c", "true"]];
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
  const client = createSandboxClient({ provider: local({ root, isolation, diskImage: DISK_IMAGE }) });
  const sandbox = await client.create({ network: { egress: "block-all" } }).catch(() => client.create());
  const id = sandbox.id.slice("local:".length);
  const chain = isolation === "bwrap" ? await providerChain(sandbox, id, root) : undefined;
  if (chain?.cgroup) {
    const { mkdirSync } = await import("node:fs");
    const parent = chain.cgroup.kind === "v1" ? chain.cgroup.dirs.pids : chain.cgroup.dir;
    mkdirSync(`${parent}/c-bench`, { recursive: true });
  }
  const bare = chain ? bareBwrap(chain) : undefined;
  const samples = {
    run: [],
    spawn: [],
    chain: [],
    bare: [],
    runBeside: [],
    nsenter: [],
    overRaw: [],
    overBare: [],
  };
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
    bare: () => {
      const [file, args] = bare;
      return timeSpawn(file, args, [join(chain.dir, "bare-args"), join(chain.dir, "seccomp")]);
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
    // Bare bubblewrap in a phase of its own, alternating with run() only: each bare command makes a network
    // namespace whose teardown the kernel finishes later, in the background, which would slow down whichever
    // variant came next in the rotation above. Here it weighs on bare's own rounds and on run's alike.
    if (chain) {
      for (let i = 0; i < WARMUP + ROUNDS; i++) {
        const first = i % 2 === 0 ? "run" : "bare";
        const second = first === "run" ? "bare" : "run";
        const times = { [first]: await variants[first](), [second]: await variants[second]() };
        if (i >= WARMUP) {
          samples.bare.push(times.bare);
          samples.runBeside.push(times.run);
          samples.overBare.push(times.run - times.bare);
        }
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
    bare: chain ? median(samples.bare) : 0,
    runBeside: chain ? median(samples.runBeside) : 0,
    pairedOverBare: chain ? median(samples.overBare) : 0,
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
    `                 bare bubblewrap, same isolation arguments (fresh namespaces and view per command) ${bwrap.bare.toFixed(2)} ms against commands.run("true") ${bwrap.runBeside.toFixed(2)} ms beside it: ${bwrap.runBeside - bwrap.bare >= 0 ? "+" : ""}${(bwrap.runBeside - bwrap.bare).toFixed(2)} ms (median per-round difference ${bwrap.pairedOverBare >= 0 ? "+" : ""}${bwrap.pairedOverBare.toFixed(2)} ms)`,
  );
  console.log(
    `                 the namespaces' own cost: nsenter into them + true ${bwrap.nsenter.toFixed(2)} ms against spawn("true") ${bwrap.spawn.toFixed(2)} ms (+${(bwrap.nsenter - bwrap.spawn).toFixed(2)} ms)`,
  );
  console.log(
    `(${ROUNDS} rounds each, medians, interleaved; node ${process.version}; uid ${process.getuid?.()})`,
  );
} finally {
  // As root the state root is a private mount of itself (sandboxes' disk images): unmounted before removal.
  const points = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point === root || point.startsWith(`${root}/`))
    .sort((a, b) => b.length - a.length);
  for (const point of points) spawnSync("umount", ["-l", point]);
  rmSync(root, { recursive: true, force: true });
}
