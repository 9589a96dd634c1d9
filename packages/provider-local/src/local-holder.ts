import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, readlink, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { bwrapArgs, runningAsRoot } from "./local-bwrap.js";
import type { CommandSettings, CommandTarget } from "./local-command.js";
import { localError } from "./local-errors.js";
import { newLocalId } from "./local-ids.js";
import type { ResolvedIsolation } from "./local-isolation.js";
import type { NamespaceLease } from "./local-namespace-cache.js";
import {
  COMMAND_TAG_VARIABLE,
  findTaggedProcesses,
  readProcStat,
  SANDBOX_TAG_VARIABLE,
} from "./local-procfs.js";
import { writeFileAtomic } from "./local-state.js";

/** `holder.json`: the process that keeps a sandbox's PID namespace alive. */
interface HolderRecord {
  /** Host pid of the holder's shell inside the namespace. */
  readonly pid: number;
  readonly startTime: number;
}

const START_TIMEOUT_MS = 10_000;
const STALE_LOCK_MS = 15_000;

/**
 * Whether commands share one PID namespace per sandbox. Joining a namespace (`bwrap --pidns`) needs
 * privileges over it, which only root has: an unprivileged bubblewrap cannot join the user namespace it
 * created, so there every command gets a PID namespace of its own.
 */
export function sharesPidNamespace(isolation: ResolvedIsolation): boolean {
  return isolation.mode === "bwrap" && runningAsRoot();
}

function readHolder(path: string): HolderRecord | undefined {
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as HolderRecord;
    return Number.isInteger(parsed.pid) && Number.isInteger(parsed.startTime) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

// Synchronous, like the record: two tiny reads (only when the namespace is not kept open already).
async function liveHolder(path: string): Promise<HolderRecord | undefined> {
  const holder = readHolder(path);
  if (!holder) return undefined;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${holder.pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const alive = fields[0] !== "Z" && fields[0] !== "X" && Number(fields[19]) === holder.startTime;
  return alive ? holder : undefined;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A cross-program lock: a directory created atomically; one older than STALE_LOCK_MS is abandoned. */
async function withLock<T>(lock: string, work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    try {
      await mkdir(lock);
      break;
    } catch (error) {
      if ((error as { code?: string }).code !== "EEXIST") throw error;
      const age = await stat(lock).then(
        (s) => Date.now() - s.mtimeMs,
        () => 0,
      );
      if (age > STALE_LOCK_MS) await rm(lock, { recursive: true, force: true });
      else if (Date.now() > deadline)
        throw localError("Timeout", "timed out waiting for the sandbox's namespace lock");
      else await sleep(20);
    }
  }
  try {
    return await work();
  } finally {
    await rm(lock, { recursive: true, force: true }).catch(() => {});
  }
}

/**
 * Returns the host pid of a process inside the sandbox's PID namespace, starting the holder first when
 * there is none (first command, after a stop, after a reboot). The holder is a detached bubblewrap whose
 * shell only sleeps; it is tagged like every sandbox process, so stop and destroy end it and with it the
 * namespace.
 */
export async function ensureSandboxNamespace(
  settings: CommandSettings,
  isolation: Extract<ResolvedIsolation, { mode: "bwrap" }>,
  target: CommandTarget,
): Promise<number> {
  return (await ensureHolder(settings, isolation, target)).pid;
}

async function ensureHolder(
  settings: CommandSettings,
  isolation: Extract<ResolvedIsolation, { mode: "bwrap" }>,
  target: CommandTarget,
): Promise<HolderRecord> {
  const file = join(target.paths.dir, "holder.json");
  const running = await liveHolder(file);
  if (running !== undefined) return running;
  return withLock(join(target.paths.dir, "holder.lock"), async () => {
    const again = await liveHolder(file);
    if (again !== undefined) return again;
    const tag = `holder-${newLocalId()}`;
    const args = bwrapArgs({
      bwrapPath: isolation.bwrapPath,
      workspace: target.paths.workspace,
      tmp: target.paths.tmp,
      cwd: "/",
      unshareNet: false,
      dieWithParent: false,
      hide: settings.hide,
      pid: "new",
    });
    const child = spawn(
      isolation.bwrapPath,
      [...args, "--", settings.shell, "-c", "while :; do sleep 86400; done"],
      {
        cwd: target.paths.workspace,
        env: { PATH: settings.path, [SANDBOX_TAG_VARIABLE]: target.id, [COMMAND_TAG_VARIABLE]: tag },
        stdio: "ignore",
        detached: true,
      },
    );
    child.on("error", () => {});
    child.unref();
    const ownNamespace = await readlink("/proc/self/ns/pid");
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (Date.now() < deadline) {
      for (const proc of await findTaggedProcesses(COMMAND_TAG_VARIABLE, tag)) {
        const [namespace, exe] = await Promise.all([
          readlink(`/proc/${proc.pid}/ns/pid`).catch(() => ownNamespace),
          readlink(`/proc/${proc.pid}/exe`).catch(() => isolation.bwrapPath),
        ]);
        if (namespace === ownNamespace || exe === isolation.bwrapPath) continue;
        const stat = await readProcStat(proc.pid);
        if (!stat) continue;
        const holder: HolderRecord = { pid: proc.pid, startTime: stat.startTime };
        await writeFileAtomic(file, JSON.stringify(holder));
        return holder;
      }
      if (child.exitCode !== null) break;
      await sleep(5);
    }
    throw localError(
      "Provider",
      `the PID namespace of local sandbox ${target.id} could not be started (bwrap exited ${String(child.exitCode)})`,
    );
  });
}

/** The descriptor a command passes on as fd 3 to join the sandbox's PID namespace. */
export const NAMESPACE_CHILD_FD = 3;

/**
 * For a command about to start: a lease on a descriptor of the sandbox's PID namespace when commands share
 * one (the caller passes it on as fd 3 and releases the lease after the spawn), else `undefined`. The
 * descriptor stays open in `settings.namespaces` for the next command; a holder that died in between is
 * started again.
 */
export async function namespaceForCommand(
  settings: CommandSettings,
  isolation: ResolvedIsolation,
  target: CommandTarget,
): Promise<NamespaceLease | undefined> {
  if (isolation.mode !== "bwrap" || !sharesPidNamespace(isolation)) return undefined;
  const key = target.paths.dir;
  const kept = settings.namespaces.lease(key);
  if (kept) return kept;
  for (let attempt = 0; ; attempt++) {
    const holder = await ensureHolder(settings, isolation, target);
    const lease = settings.namespaces.adopt(key, holder.pid, holder.startTime);
    if (lease) return lease;
    if (attempt >= 1) throw localError("Provider", "cannot open the sandbox's PID namespace");
  }
}
