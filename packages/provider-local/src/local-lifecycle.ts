import { randomBytes } from "node:crypto";
import { chmod, readdir, rename, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { markAllKilled } from "./local-background.js";
import type { CommandTarget } from "./local-command.js";
import { localError } from "./local-errors.js";
import { findTaggedProcesses, SANDBOX_TAG_VARIABLE, sendSignal, signalTree } from "./local-procfs.js";
import { type LocalSandboxPaths, type LocalSandboxRecord, updateRecord } from "./local-state.js";

const sandboxTag = (id: string) => ({ name: SANDBOX_TAG_VARIABLE, value: id });

/** Kills every process of the sandbox (foreground, background, pty, and whatever they started). */
export async function killAllProcesses(target: CommandTarget): Promise<void> {
  await markAllKilled(target, "SIGKILL");
  const left = await signalTree(sandboxTag(target.id), "SIGKILL");
  if (left > 0) {
    throw localError("Provider", `${left} processes of local sandbox ${target.id} survived SIGKILL`);
  }
}

/** Stops the sandbox: every process is killed, every file kept. Stopping a stopped sandbox changes nothing. */
export async function stopSandbox(target: CommandTarget): Promise<LocalSandboxRecord> {
  await killAllProcesses(target);
  return updateRecord(target.paths, target.id, (record) => ({ ...record, state: "stopped" }));
}

/**
 * Freezes every process of the sandbox with SIGSTOP. Two passes catch a process forked while the first one
 * ran; a process forked by a stopped one cannot exist.
 */
export async function pauseSandbox(target: CommandTarget): Promise<LocalSandboxRecord> {
  if (target.record.state === "stopped") {
    throw localError("InvalidState", `local sandbox ${target.id} is stopped; resume it before pausing`);
  }
  const record = await updateRecord(target.paths, target.id, (r) => ({ ...r, state: "paused" }));
  for (let pass = 0; pass < 2; pass++) await signalTree(sandboxTag(target.id), "SIGSTOP");
  return record;
}

/** Brings a stopped or paused sandbox back; a paused one continues where it was. */
export async function resumeSandbox(target: CommandTarget): Promise<LocalSandboxRecord> {
  if (target.record.state === "paused") {
    const processes = await findTaggedProcesses(SANDBOX_TAG_VARIABLE, target.id);
    for (const proc of processes) sendSignal(proc.pid, "SIGCONT");
  }
  return updateRecord(target.paths, target.id, (record) => ({ ...record, state: "running" }));
}

/** True when the sandbox's time to live has passed. */
export function isExpired(record: LocalSandboxRecord, now: number = Date.now()): boolean {
  return record.expiresAt !== undefined && Date.parse(record.expiresAt) <= now;
}

/**
 * Removes a sandbox directory. It is first renamed to a hidden name in the state root (not a valid id), so
 * the sandbox disappears at once for every other program even while its files are being deleted.
 */
export async function removeSandboxDirectory(paths: LocalSandboxPaths): Promise<void> {
  const trash = join(dirname(paths.dir), `.trash-${randomBytes(8).toString("hex")}`);
  try {
    await rename(paths.dir, trash);
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return;
    throw error;
  }
  await removeTree(trash);
}

/** `rm -rf` that also gets through directories a sandbox made unreadable (mode 000). */
async function removeTree(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true, maxRetries: 2 });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== "EACCES" && code !== "EPERM") throw error;
    await makeWritable(path);
    await rm(path, { recursive: true, force: true, maxRetries: 2 });
  }
}

async function makeWritable(dir: string): Promise<void> {
  await chmod(dir, 0o700).catch(() => {});
  let entries: import("node:fs").Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) if (entry.isDirectory()) await makeWritable(join(dir, entry.name));
}
