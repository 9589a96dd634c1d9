import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { at, closeQuietly, openDirectory } from "./local-fd-paths.js";
import { isProcessAlive, readProcStat } from "./local-procfs.js";
import { startBoundMs, startTimeout } from "./local-start-wait.js";

/** A lock with no owner record yet (its owner died between making it and naming itself) is stale after this. */
const UNNAMED_STALE_MS = 15_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

let selfStart: Promise<number | undefined> | undefined;

/** This program as a lock owner: pid and start time (a reused pid is not mistaken for it). */
async function ownerText(): Promise<string> {
  selfStart ??= readProcStat(process.pid).then((found) => found?.startTime);
  return `${process.pid} ${(await selfStart) ?? 0}`;
}

/** Whether the lock open as `path` is abandoned: its owner is gone, or it never named one and is old. */
async function isAbandoned(path: string): Promise<boolean> {
  const owner = await readFile(`${path}/owner`, "utf8").catch(() => undefined);
  const [pid, start] = (owner ?? "").split(" ").map(Number);
  if (pid && start !== undefined && Number.isInteger(start)) return !(await isProcessAlive(pid, start));
  const age = await stat(path).then(
    (found) => Date.now() - found.mtimeMs,
    () => 0,
  );
  return age > UNNAMED_STALE_MS;
}

/**
 * Takes an abandoned lock away: renamed aside first (atomic, so two waiters cannot both take it), then
 * checked again under its new name, in case a live owner took the name in between (it is then put back).
 */
async function takeOver(parent: number, name: string): Promise<void> {
  const aside = at(parent, `${name}.abandoned-${randomBytes(6).toString("hex")}`);
  try {
    await rename(at(parent, name), aside);
  } catch {
    return; // gone meanwhile, or taken over by another waiter
  }
  if (await isAbandoned(aside)) await rm(aside, { recursive: true, force: true });
  else await rename(aside, at(parent, name)).catch(() => rm(aside, { recursive: true, force: true }));
}

/**
 * A cross-program lock: a directory created atomically, holding its owner's pid and start time. It is made
 * and removed through a descriptor of the directory it is in, never by path again: when that directory is
 * renamed while the lock is held (destroy hides a sandbox's directory first, whoever holds its lock), the
 * release still removes the lock where it now is, instead of leaving it behind to block the destroy and,
 * put back, every later start. A lock whose owner is gone is taken over at once, whatever its age; waiting
 * for a live owner is bounded by `boundMs` (a `Timeout` naming the lock).
 */
export async function withLock<T>(
  lock: string,
  work: () => Promise<T>,
  boundMs: number = startBoundMs(),
): Promise<T> {
  const parent = await openDirectory(dirname(lock));
  const name = basename(lock);
  try {
    const started = Date.now();
    for (let delay = 2; ; delay = Math.min(50, delay * 2)) {
      try {
        await mkdir(at(parent, name));
        break;
      } catch (error) {
        if ((error as { code?: string }).code !== "EEXIST") throw error;
        if (await isAbandoned(at(parent, name))) await takeOver(parent, name);
        else if (Date.now() - started > boundMs) throw startTimeout(`the lock ${lock}`, Date.now() - started);
        else await sleep(delay);
      }
    }
    try {
      await writeFile(at(parent, `${name}/owner`), await ownerText());
      return await work();
    } finally {
      await rm(at(parent, name), { recursive: true, force: true }).catch(() => {});
    }
  } finally {
    await closeQuietly(parent);
  }
}
