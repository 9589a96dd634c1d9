import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { readFile, readlink, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { shellQuote } from "@sbox/core/spec";
import type { SandboxCgroup } from "./local-cgroups.js";
import { cgroupViews, holderGroup } from "./local-cgroups.js";
import type { CommandSettings, CommandTarget, RunningSandbox } from "./local-command.js";
import { localError } from "./local-errors.js";
import type { HolderCache } from "./local-holder-cache.js";
import { holderStage } from "./local-holder-stage.js";
import { hostIdentity, SANDBOX_USER, sandboxGroup, sandboxPasswd } from "./local-identity.js";
import type { ResolvedIsolation } from "./local-isolation.js";
import {
  hostPrefix,
  recordedCgroup,
  SYSTEM_PATH,
  sandboxCgroupFor,
  sandboxResources,
} from "./local-launch.js";
import { shmBytes } from "./local-limits.js";
import { withLock } from "./local-lock.js";
import {
  addPortForward,
  aliveFifo,
  HOST_LOOPBACK_GATEWAY,
  type NetworkRecord,
  networkSupport,
  SANDBOX_DNS,
  startNetwork,
  stopNetwork,
} from "./local-network.js";
import { COMMAND_TAG_VARIABLE, readProcStat, SANDBOX_TAG_VARIABLE } from "./local-procfs.js";
import { seccompFile } from "./local-seccomp-file.js";
import { startBoundMs, startTimeout, waitFor } from "./local-start-wait.js";
import { ensureSandboxDirectories, pathsIn, writeFileAtomic } from "./local-state.js";
import { SANDBOX_BOOT_ID_FILE, viewArgs } from "./local-view.js";

/** A process identified across pid reuse. */
export interface ProcessIdentity {
  readonly pid: number;
  readonly startTime: number;
}

/** `holder.json`: the processes that keep a running sandbox's namespaces alive. */
export interface HolderRecord {
  readonly version: 2;
  /** The PID namespace's init (bubblewrap's reaper): killing it ends every process in the sandbox. */
  readonly init: ProcessIdentity;
  /** The process whose namespaces every command joins (the holder's sleep). */
  readonly anchor: ProcessIdentity;
  /** `readlink /proc/<anchor>/ns/pid`, to tell the sandbox's processes from the host's. */
  readonly pidNamespace: string;
  /** How commands with egress allowed reach the network: the sandbox's own stack, or the host's namespace. */
  readonly network: "user-mode" | "host";
  /** The user-mode stack, while egress is allowed. */
  readonly stack?: NetworkRecord | undefined;
}

/** What the holder sleeps for (a number both GNU and busybox sleep take): about 68 years. */
const SLEEP_SECONDS = "2147483647";

/** SIGKILL to `pid` (a negative one: its process group) when it is still there (a start that gave up). */
function killQuietly(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // gone already
  }
}

function holderFile(target: CommandTarget): string {
  return join(target.paths.dir, "holder.json");
}

function readHolder(target: CommandTarget): HolderRecord | undefined {
  try {
    const parsed = JSON.parse(readFileSync(holderFile(target), "utf8")) as HolderRecord;
    return parsed.version === 2 && Number.isInteger(parsed.anchor?.pid) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** True when `process` runs (not a zombie) and is the same process (same start time). */
export async function isAlive(process: ProcessIdentity): Promise<boolean> {
  const found = await readProcStat(process.pid);
  return (
    found !== undefined && found.state !== "Z" && found.state !== "X" && found.startTime === process.startTime
  );
}

/** The holder recorded for `target` when it still runs. */
export async function liveHolder(target: CommandTarget): Promise<HolderRecord | undefined> {
  const holder = readHolder(target);
  return holder && (await isAlive(holder.anchor)) ? holder : undefined;
}

/** Runs `work` holding the sandbox's holder lock (starting, stopping, changing its network). */
export function withHolderLock<T>(
  target: CommandTarget,
  work: () => Promise<T>,
  boundMs?: number | undefined,
): Promise<T> {
  // A start holds it for up to its own bound: others wait for twice that before they give up.
  return withLock(join(target.paths.dir, "holder.lock"), work, boundMs ?? 2 * startBoundMs());
}

/**
 * Writes the sandbox's own `/etc` files: its user, its host name, and a resolver its network can reach;
 * and its boot id, new with every start of the holder (a stop ends it: the next start is a new boot).
 */
function writeEtc(target: CommandTarget, network: "user-mode" | "host"): void {
  const dir = target.paths.etc;
  const hostname = "sandbox";
  let resolv: string;
  if (network === "user-mode") resolv = `nameserver ${SANDBOX_DNS}\n`;
  else {
    try {
      resolv = readFileSync("/etc/resolv.conf", "utf8");
    } catch {
      resolv = "";
    }
  }
  const hosts = [
    `127.0.0.1\tlocalhost ${hostname}`,
    "::1\tlocalhost ip6-localhost ip6-loopback",
    ...(target.record.hostLoopback ? [`${HOST_LOOPBACK_GATEWAY}\thost.sandbox.internal`] : []),
    "",
  ].join("\n");
  const files: Record<string, string> = {
    passwd: sandboxPasswd(),
    group: sandboxGroup(),
    hostname: `${hostname}\n`,
    hosts,
    "resolv.conf": resolv,
    [SANDBOX_BOOT_ID_FILE]: `${randomUUID()}\n`,
  };
  for (const [name, content] of Object.entries(files))
    writeFileSync(join(dir, name), content, { mode: 0o644 });
}

/**
 * Reads what the holder's bubblewrap reports on its info descriptor: the host pid of the namespace's init;
 * `undefined` when bubblewrap ended without naming one, `"timeout"` when it said nothing within `boundMs`.
 */
function readInitPid(child: ChildProcess, boundMs: number): Promise<number | "timeout" | undefined> {
  return new Promise((resolve) => {
    const stream = child.stdio[4] as NodeJS.ReadableStream | null;
    if (!stream) return resolve(undefined);
    let text = "";
    const done = () => resolve(Number(/"child-pid":\s*(\d+)/.exec(text)?.[1]) || undefined);
    const timer = setTimeout(() => resolve("timeout"), boundMs);
    stream.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
      if (text.includes("}")) {
        clearTimeout(timer);
        done();
      }
    });
    stream.on("end", () => {
      clearTimeout(timer);
      done();
    });
    stream.on("error", () => {});
  });
}

/** The first child of `pid` (the holder's init has exactly one: the anchor). */
async function firstChild(pid: number): Promise<number | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/task/${pid}/children`, "utf8");
    const first = text.trim().split(/\s+/)[0];
    return first ? Number(first) : undefined;
  } catch {
    return undefined;
  }
}

/** The user namespace link of `pid`, or undefined. */
async function userNamespaceOf(pid: number): Promise<string | undefined> {
  return readlink(`/proc/${pid}/ns/user`).catch(() => undefined);
}

/**
 * Starts the processes that hold a sandbox's namespaces: bubblewrap with a PID, network, IPC and UTS namespace
 * and the sandbox's filesystem view, whose one command only sleeps. Commands then join those namespaces
 * (and build their own view from the holder's), so processes of every command see each other, a detached
 * process outlives the command that started it, and the network is the sandbox's.
 *
 * As root, the holder itself runs as root (so it can bind the state root, which the sandbox user cannot
 * traverse), without capabilities, and its sleep makes the sandbox's user namespace, mapping only the sandbox
 * user to an unprivileged host id. Unprivileged, bubblewrap makes the user namespace, mapping uid 0 to this
 * user, and each command nests its own inside it to run as the sandbox user.
 */
async function startHolder(
  settings: CommandSettings,
  isolation: Extract<ResolvedIsolation, { mode: "bwrap" }>,
  target: CommandTarget,
): Promise<HolderRecord> {
  const identity = hostIdentity();
  const owner = identity.root ? { uid: identity.sandboxUid, gid: identity.sandboxGid } : undefined;
  // The sandbox's own directories below its directory (with a FUSE disk, the view binds the image's instead:
  // never made here, so that a disk unmounted meanwhile fails the start rather than bind the host's disk).
  await ensureSandboxDirectories(pathsIn(target.paths.dir), owner);
  const resources = sandboxResources(target.record);
  const cgroup = await sandboxCgroupFor(target, resources);
  const support = networkSupport(identity);
  const network = support.kind === "slirp4netns" ? "user-mode" : "host";
  writeEtc(target, network);
  const stage = holderStage(
    target.paths,
    dirname(target.paths.dir),
    isolation.programs.unshare,
    identity.root && target.record.disk === "image",
  );
  const view = viewArgs({
    workspace: stage?.workspace ?? target.paths.workspace,
    tmp: stage?.tmp ?? target.paths.tmp,
    home: stage?.home ?? target.paths.home,
    etc: stage?.etc ?? target.paths.etc,
    mounts: settings.mounts,
    shmBytes: shmBytes(resources),
    cgroups: cgroup ? cgroupViews(cgroup) : [],
  });
  const namespaces = [
    "--unshare-pid",
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-uts",
    "--hostname",
    "sandbox",
  ];
  const programs = isolation.programs;
  const tail = identity.root
    ? [
        "--cap-drop",
        "ALL",
        "--info-fd",
        "4",
        "--",
        programs.unshare,
        "--user",
        "--",
        programs.sleep,
        SLEEP_SECONDS,
      ]
    : ["--cap-drop", "ALL", "--seccomp", "7", "--info-fd", "4", "--", programs.sleep, SLEEP_SECONDS];
  const bwrap = [
    ...(stage?.launcher ?? []),
    isolation.bwrapPath,
    ...(identity.root ? [] : ["--unshare-user", "--uid", "0", "--gid", "0"]),
    ...namespaces,
    ...view,
    ...tail,
  ];
  const tag = `holder-${target.id}`;
  // No rlimits here: the process limit of the namespace bubblewrap creates would count all of this user's
  // processes on the host. Each command's launcher sets them (see hostPrefix).
  // The holder keeps a FIFO open (fd 9, inherited by every process of it): the network stack, given the
  // FIFO's other end, ends by itself once the last of them is gone, however the sandbox ended.
  const alive = shellQuote(aliveFifo(target.paths.net));
  const prefix = [
    `[ -p ${alive} ] || mkfifo -m 600 ${alive} || exit 125`,
    `exec 9<>${alive} || exit 125`,
    hostPrefix({
      cgroupFiles: cgroup ? joinHolder(cgroup) : [],
      seccomp: identity.root ? undefined : seccompFile(settings.stateRoot),
    }),
  ].join("\n");
  const child = spawn("/bin/sh", ["-c", prefix, "sbox-holder", ...bwrap], {
    cwd: "/",
    env: { PATH: SYSTEM_PATH, [SANDBOX_TAG_VARIABLE]: target.id, [COMMAND_TAG_VARIABLE]: tag },
    stdio: ["ignore", "ignore", "pipe", "ignore", "pipe"],
    detached: true,
  });
  child.on("error", () => {});
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    if (stderr.length < 4096) stderr += chunk.toString("utf8");
  });
  const boundMs = startBoundMs(settings.startTimeoutMs);
  const started = Date.now();
  const initPid = await readInitPid(child, boundMs);
  child.unref();
  const failed = (why: string) => {
    child.stderr?.destroy();
    return localError(
      "Provider",
      `the namespaces of local sandbox ${target.id} could not be started: ${why}${stderr ? ` (${stderr.trim()})` : ""}`,
    );
  };
  if (initPid === "timeout") {
    killQuietly(child.pid === undefined ? undefined : -child.pid);
    child.stderr?.destroy();
    throw startTimeout(
      `bubblewrap to start the namespaces of local sandbox ${target.id}`,
      Date.now() - started,
    );
  }
  if (initPid === undefined) throw failed(`bwrap exited ${String(child.exitCode)}`);
  const initStat = await readProcStat(initPid);
  if (!initStat) throw failed("the holder exited at once");
  const initUserNamespace = await userNamespaceOf(initPid);
  // Bounded by what is left of the start's bound (the same for bubblewrap's start and its command's).
  const anchor = await waitFor(
    `the namespace holder of local sandbox ${target.id} to run`,
    Math.max(0, boundMs - (Date.now() - started)),
    async () => {
      if (!(await isAlive({ pid: initPid, startTime: initStat.startTime }))) return null;
      const first = await firstChild(initPid);
      // As root the anchor makes the sandbox's user namespace itself: wait until it has.
      if (first !== undefined && (!identity.root || (await userNamespaceOf(first)) !== initUserNamespace))
        return first;
      return undefined;
    },
  ).catch((error: unknown) => {
    killQuietly(initPid);
    killQuietly(child.pid === undefined ? undefined : -child.pid);
    child.stderr?.destroy();
    throw error;
  });
  // bubblewrap's own errors come after it named its init: read until its command runs, for the message.
  child.stderr?.destroy();
  if (anchor === null) throw failed("its sleep never started (the holder exited)");
  if (identity.root) {
    const { uid, gid } = SANDBOX_USER;
    writeFileSync(`/proc/${anchor}/uid_map`, `${uid} ${identity.sandboxUid} 1\n`);
    writeFileSync(`/proc/${anchor}/setgroups`, "deny");
    writeFileSync(`/proc/${anchor}/gid_map`, `${gid} ${identity.sandboxGid} 1\n`);
  }
  const anchorStat = await readProcStat(anchor);
  if (!anchorStat) throw failed("its sleep exited");
  let holder: HolderRecord = {
    version: 2,
    init: { pid: initPid, startTime: initStat.startTime },
    anchor: { pid: anchor, startTime: anchorStat.startTime },
    pidNamespace: await readlink(`/proc/${anchor}/ns/pid`),
    network,
  };
  try {
    if (network === "user-mode" && target.record.egress === "allow-all") {
      holder = { ...holder, stack: await startSandboxNetwork(isolation, target, holder) };
    }
  } catch (error) {
    await killHolderProcesses(holder).catch(() => {});
    throw error;
  }
  await writeFileAtomic(holderFile(target), JSON.stringify(holder));
  return holder;
}

function joinHolder(cgroup: SandboxCgroup): string[] {
  return [
    holderGroup(cgroup),
    ...(cgroup.kind === "v1" ? Object.values(cgroup.dirs).filter((dir) => dir !== cgroup.dirs.pids) : []),
  ].map((dir) => join(dir, "cgroup.procs"));
}

async function startSandboxNetwork(
  isolation: Extract<ResolvedIsolation, { mode: "bwrap" }>,
  target: CommandTarget,
  holder: HolderRecord,
): Promise<NetworkRecord> {
  const identity = hostIdentity();
  const support = networkSupport(identity);
  if (support.kind !== "slirp4netns") throw localError("Provider", `no user-mode network: ${support.reason}`);
  const stack = await startNetwork({
    support,
    identity,
    bwrapPath: isolation.bwrapPath,
    anchor: holder.anchor.pid,
    dir: target.paths.net,
    hostLoopback: target.record.hostLoopback === true,
    tags: { [SANDBOX_TAG_VARIABLE]: target.id, [COMMAND_TAG_VARIABLE]: `network-${target.id}` },
  });
  for (const port of target.record.ports) await addPortForward(stack, port);
  return stack;
}

/**
 * Returns the running holder of `target`, starting it first when there is none (first command, after a
 * stop, after a reboot).
 */
export async function ensureHolder(
  settings: CommandSettings,
  isolation: Extract<ResolvedIsolation, { mode: "bwrap" }>,
  target: CommandTarget,
): Promise<HolderRecord> {
  const running = await liveHolder(target);
  if (running) return running;
  return withHolderLock(
    target,
    async () => {
      const again = await liveHolder(target);
      if (again) return again;
      return startHolder(settings, isolation, target);
    },
    2 * startBoundMs(settings.startTimeoutMs),
  );
}

/**
 * Ends a holder: its PID namespace's init (the kernel then kills every process in the namespace) and the
 * network stack. Resolves once both are gone; rejects when one survives SIGKILL.
 */
export async function killHolderProcesses(holder: HolderRecord): Promise<void> {
  for (const process_ of [holder.init, holder.anchor]) {
    if (await isAlive(process_)) {
      try {
        process.kill(process_.pid, "SIGKILL");
      } catch {
        // gone meanwhile
      }
    }
  }
  if (holder.stack) await stopNetwork(holder.stack);
  await waitFor(
    `the PID namespace's init (pid ${holder.init.pid}) to end after SIGKILL`,
    startBoundMs(),
    async () => ((await isAlive(holder.init)) || (await isAlive(holder.anchor)) ? undefined : true),
  ).catch((error: unknown) => {
    throw localError("Provider", `the PID namespace's init (pid ${holder.init.pid}) survived SIGKILL`, error);
  });
}

/** Stops the sandbox's holder, if one runs (stop, destroy). */
export async function stopHolder(target: CommandTarget): Promise<void> {
  await withHolderLock(target, async () => {
    const holder = readHolder(target);
    if (holder) await killHolderProcesses(holder);
    await rm(holderFile(target), { force: true });
  });
}

/**
 * Applies an egress policy to a running sandbox at once: the user-mode stack is started for `allow-all`
 * and stopped for `block-all` (without it the sandbox's network namespace has nothing but its loopback).
 * With the host's network as fallback, policies apply to commands started afterwards.
 */
export async function applyEgress(
  isolation: Extract<ResolvedIsolation, { mode: "bwrap" }>,
  target: CommandTarget,
): Promise<void> {
  await withHolderLock(target, async () => {
    const holder = await liveHolder(target);
    if (holder?.network !== "user-mode") return;
    let next: HolderRecord = holder;
    if (target.record.egress === "block-all" && holder.stack) {
      await stopNetwork(holder.stack);
      next = { ...holder, stack: undefined };
    } else if (target.record.egress === "allow-all" && !holder.stack) {
      next = { ...holder, stack: await startSandboxNetwork(isolation, target, holder) };
    }
    if (next !== holder) await writeFileAtomic(holderFile(target), JSON.stringify(next));
  });
}

/**
 * What a command of `target` joins: its running holder (started when there is none) and its cgroup. Kept in
 * `cache` between commands, checked there with one read per command.
 */
export async function ensureRunning(
  settings: CommandSettings,
  isolation: Extract<ResolvedIsolation, { mode: "bwrap" }>,
  target: CommandTarget,
  cache: HolderCache,
): Promise<RunningSandbox> {
  const key = target.paths.dir;
  const kept = cache.get(key);
  if (kept) return kept;
  for (let attempt = 0; ; attempt++) {
    const holder = await ensureHolder(settings, isolation, target);
    const running: RunningSandbox = { holder, cgroup: recordedCgroup(target) };
    if (cache.keep(key, running)) return running;
    // The holder ended between its start and now (another program stopped the sandbox): start again once.
    if (attempt >= 1)
      throw localError("Provider", `the namespaces of local sandbox ${target.id} keep ending`);
  }
}
