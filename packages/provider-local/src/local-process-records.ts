import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { DriverExit } from "@sbox/core/spec";
import { assertLocalId } from "./local-ids.js";
import { isProcessAlive, signalNumber } from "./local-procfs.js";
import { writeFileAtomic } from "./local-state.js";

/** `procs/<token>/meta.json`: what identifies a background process across host programs. */
export interface ProcessMeta {
  readonly version: 1;
  readonly token: string;
  /** Host pid of the wrapper, which leads the process group. */
  readonly pid: number;
  /** Start time (clock ticks after boot) of that pid, so a reused pid is never mistaken for it. */
  readonly startTime?: number | undefined;
  /** The command as shown by `commands.list()`. */
  readonly command: string;
  readonly startedAt: string;
}

/** The files of one background process. */
export interface ProcessFiles {
  readonly dir: string;
  readonly meta: string;
  readonly stdout: string;
  readonly stderr: string;
  /** Created by the wrapper once it holds the command's stdin open. */
  readonly opened: string;
  /** Non-empty once the command started inside bubblewrap. */
  readonly ready: string;
  /** FIFO the command reads its stdin from. */
  readonly stdin: string;
  /** Written by the wrapper when the command ends: its exit code. */
  readonly exit: string;
  /** Written by the provider before it signals the process: the signal's name. */
  readonly killed: string;
}

/** The files of background process `token` in the `procs` directory of a sandbox. */
export function processFiles(procsDir: string, token: string): ProcessFiles {
  const dir = join(procsDir, assertLocalId(token, "process token"));
  return {
    dir,
    meta: join(dir, "meta.json"),
    stdout: join(dir, "stdout"),
    stderr: join(dir, "stderr"),
    stdin: join(dir, "stdin"),
    ready: join(dir, "ready"),
    opened: join(dir, "opened"),
    exit: join(dir, "exit"),
    killed: join(dir, "killed"),
  };
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch {
    return undefined;
  }
}

/** The exit code the wrapper recorded, if it got to write it completely. */
export async function recordedExitCode(files: ProcessFiles): Promise<number | undefined> {
  const text = await readOptional(files.exit);
  if (text === undefined || !/^\d+\n$/.test(text)) return undefined;
  return Number(text.trim());
}

/** Records the signal the provider is about to send, so the exit can be reported with it. */
export async function recordKill(files: ProcessFiles, signal: string): Promise<void> {
  await writeFileAtomic(files.killed, signal);
}

/** Whether the process still runs: no exit recorded, and its wrapper pid is alive and the same process. */
export async function isRunning(files: ProcessFiles, meta: ProcessMeta): Promise<boolean> {
  if ((await recordedExitCode(files)) !== undefined) return false;
  return isProcessAlive(meta.pid, meta.startTime);
}

/**
 * How a finished process ended: the wrapper's recorded exit code (with the signal name when it is the signal
 * the provider sent), else the wrapper's own signal death, else the recorded kill. A process that vanished
 * with no record at all (a host reboot) is reported as killed.
 */
export async function finalExit(
  files: ProcessFiles,
  wrapperExit?: { code: number | null; signal: NodeJS.Signals | null } | undefined,
): Promise<DriverExit> {
  const code = await recordedExitCode(files);
  const killedText = await readOptional(files.killed);
  const killed = killedText && signalNumber(killedText) !== undefined ? killedText : undefined;
  // Killed while its sandbox was still being set up (the launchers failed once the sandbox was stopped): the
  // command never ran, and the kill is what ended it.
  if (killed && code !== undefined && (await readOptional(files.ready)) === "") {
    return { exitCode: 128 + signalNumber(killed)!, signal: killed };
  }
  if (code !== undefined) {
    if (killed && code === 128 + signalNumber(killed)!) return { exitCode: code, signal: killed };
    return { exitCode: code };
  }
  if (wrapperExit?.signal)
    return { exitCode: 128 + (signalNumber(wrapperExit.signal) ?? 0), signal: wrapperExit.signal };
  if (killed) return { exitCode: 128 + signalNumber(killed)!, signal: killed };
  if (wrapperExit && wrapperExit.code !== null) return { exitCode: wrapperExit.code };
  return { exitCode: 137, signal: "SIGKILL" };
}

/** Writes the meta file. */
export async function writeProcessMeta(files: ProcessFiles, meta: ProcessMeta): Promise<void> {
  await writeFileAtomic(files.meta, JSON.stringify(meta));
}

/** Every background process recorded for a sandbox (records still being written are skipped). */
export async function listProcessRecords(
  procsDir: string,
): Promise<{ files: ProcessFiles; meta: ProcessMeta }[]> {
  let names: string[];
  try {
    names = await readdir(procsDir);
  } catch {
    return [];
  }
  const records: { files: ProcessFiles; meta: ProcessMeta }[] = [];
  await Promise.all(
    names.map(async (name) => {
      let files: ProcessFiles;
      try {
        files = processFiles(procsDir, name);
      } catch {
        return;
      }
      const text = await readOptional(files.meta);
      if (text === undefined) return;
      try {
        const meta = JSON.parse(text) as ProcessMeta;
        if (meta.version === 1 && Number.isInteger(meta.pid) && meta.token === name)
          records.push({ files, meta });
      } catch {
        // A torn or foreign file: not a record.
      }
    }),
  );
  return records.sort((a, b) => a.meta.startedAt.localeCompare(b.meta.startedAt));
}

/** The most recent record for `pid`, if any. */
export async function findProcessRecord(
  procsDir: string,
  pid: number,
): Promise<{ files: ProcessFiles; meta: ProcessMeta } | undefined> {
  const records = await listProcessRecords(procsDir);
  return records.filter((record) => record.meta.pid === pid).pop();
}
