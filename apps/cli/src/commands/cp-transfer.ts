import { createReadStream, createWriteStream } from "node:fs";
import { chmod, lstat, mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { basename, join, posix } from "node:path";
import { Readable, type Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { FileInfo, Sandbox } from "@sbox/core";
import { SandboxError, toSandboxError } from "@sbox/core";
import type { ProgressBar } from "../output/progress-bar.js";

/** What a copy did. */
export interface CopySummary {
  files: number;
  directories: number;
  bytes: number;
  /** Paths not copied (symlinks, sockets, devices), each with the reason. */
  skipped: { path: string; reason: string }[];
  /** Where the copy landed. */
  target: string;
}

/** One planned item of a copy, relative to the copy's root ("" is the root itself). */
interface PlannedEntry {
  relative: string;
  type: "file" | "dir";
  size: number;
  mode: number | undefined;
  /** Absolute source path. */
  source: string;
}

/** A planned copy: its entries (directories before their contents) and total bytes. */
export interface CopyPlan {
  entries: PlannedEntry[];
  totalBytes: number;
  skipped: { path: string; reason: string }[];
  rootType: "file" | "dir";
}

async function notFoundAsNull<T>(work: Promise<T>): Promise<T | null> {
  try {
    return await work;
  } catch (error) {
    if (SandboxError.isInstance(error) && error.code === "NotFound") return null;
    if ((error as { code?: unknown })?.code === "ENOENT") return null;
    throw error;
  }
}

/** Walks a host path. The root may be a symlink (followed, as `cp -r SRC` does); links inside are skipped. */
export async function planHostSource(root: string): Promise<CopyPlan> {
  const rootStat = await notFoundAsNull(stat(root));
  if (!rootStat) throw new SandboxError("NotFound", `no such file or directory on this machine: ${root}`);
  const plan: CopyPlan = {
    entries: [],
    totalBytes: 0,
    skipped: [],
    rootType: rootStat.isDirectory() ? "dir" : "file",
  };
  if (!rootStat.isDirectory() && !rootStat.isFile()) {
    throw new SandboxError("Validation", `${root} is neither a file nor a directory`);
  }
  const visit = async (source: string, relative: string): Promise<void> => {
    const info = relative === "" ? rootStat : await lstat(source);
    if (info.isSymbolicLink()) {
      plan.skipped.push({ path: source, reason: "symlink (not copied)" });
    } else if (info.isDirectory()) {
      plan.entries.push({ relative, type: "dir", size: 0, mode: info.mode & 0o7777, source });
      const names = (await readdir(source)).sort();
      for (const name of names)
        await visit(join(source, name), relative === "" ? name : `${relative}/${name}`);
    } else if (info.isFile()) {
      plan.entries.push({ relative, type: "file", size: info.size, mode: info.mode & 0o777, source });
      plan.totalBytes += info.size;
    } else {
      plan.skipped.push({ path: source, reason: "not a regular file" });
    }
  };
  await visit(root, "");
  return plan;
}

/** Walks a sandbox path with `files.stat`/`files.list`; symlinks and special files are skipped. */
export async function planSandboxSource(sandbox: Sandbox, root: string): Promise<CopyPlan> {
  const rootInfo = await sandbox.files.stat(root);
  if (rootInfo.type !== "file" && rootInfo.type !== "dir") {
    throw new SandboxError(
      "Validation",
      `${sandbox.id}:${root} is a ${rootInfo.type}, not a file or directory`,
    );
  }
  const plan: CopyPlan = { entries: [], totalBytes: 0, skipped: [], rootType: rootInfo.type };
  const visit = async (info: FileInfo, source: string, relative: string): Promise<void> => {
    if (info.type === "dir") {
      plan.entries.push({ relative, type: "dir", size: 0, mode: info.mode, source });
      const children = (await sandbox.files.list(source)).sort((a, b) =>
        a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
      );
      for (const child of children) {
        const childPath = child.path || posix.join(source, child.name);
        await visit(child, childPath, relative === "" ? child.name : `${relative}/${child.name}`);
      }
    } else if (info.type === "file") {
      plan.entries.push({ relative, type: "file", size: info.size, mode: info.mode, source });
      plan.totalBytes += info.size;
    } else {
      plan.skipped.push({
        path: source,
        reason: info.type === "symlink" ? "symlink (not copied)" : "not a regular file",
      });
    }
  };
  await visit(rootInfo, root, "");
  return plan;
}

function countingTransform(progress: ProgressBar): TransformStream<Uint8Array, Uint8Array> {
  return new TransformStream({
    transform(chunk, controller) {
      progress.add(chunk.byteLength);
      controller.enqueue(chunk);
    },
  });
}

/** Copies a planned host tree into the sandbox at `target`, streaming each file. */
export async function uploadPlan(
  sandbox: Sandbox,
  plan: CopyPlan,
  target: string,
  progress: ProgressBar,
): Promise<CopySummary> {
  const summary: CopySummary = { files: 0, directories: 0, bytes: 0, skipped: plan.skipped, target };
  const streamed = sandbox.capabilities.map.filesUpload !== "unsupported";
  for (const entry of plan.entries) {
    const destination = entry.relative === "" ? target : posix.join(target, entry.relative);
    progress.label(entry.relative || basename(entry.source));
    if (entry.type === "dir") {
      await sandbox.files.mkdir(destination, { recursive: true });
      summary.directories += 1;
      continue;
    }
    const options = entry.mode === undefined ? {} : { mode: entry.mode };
    if (streamed) {
      const source = Readable.toWeb(createReadStream(entry.source)) as ReadableStream<Uint8Array>;
      await sandbox.files.write(destination, source.pipeThrough(countingTransform(progress)), options);
    } else {
      const data = new Uint8Array(await readFile(entry.source));
      await sandbox.files.write(destination, data, options);
      progress.add(data.byteLength);
    }
    summary.files += 1;
    summary.bytes += entry.size;
  }
  return summary;
}

/** Copies a planned sandbox tree to the host at `target`, streaming each file; modes are kept when known. */
export async function downloadPlan(
  sandbox: Sandbox,
  plan: CopyPlan,
  target: string,
  progress: ProgressBar,
): Promise<CopySummary> {
  const summary: CopySummary = { files: 0, directories: 0, bytes: 0, skipped: plan.skipped, target };
  const streamed = sandbox.capabilities.map.filesUpload !== "unsupported";
  for (const entry of plan.entries) {
    const destination = entry.relative === "" ? target : join(target, ...entry.relative.split("/"));
    progress.label(entry.relative || posix.basename(entry.source));
    if (entry.type === "dir") {
      await mkdir(destination, { recursive: true });
      summary.directories += 1;
      continue;
    }
    try {
      if (streamed) {
        const source = Readable.fromWeb(
          sandbox.files.readStream(entry.source) as import("node:stream/web").ReadableStream,
        );
        await pipeline(
          source,
          async function* count(chunks: AsyncIterable<Buffer>) {
            for await (const chunk of chunks) {
              progress.add(chunk.byteLength);
              yield chunk;
            }
          },
          createWriteStream(destination),
        );
      } else {
        const data = await sandbox.files.read(entry.source);
        await writeFile(destination, data);
        progress.add(data.byteLength);
      }
      if (entry.mode !== undefined) await chmod(destination, entry.mode & 0o777);
    } catch (error) {
      throw toSandboxError(error, { operation: `copy ${entry.source} to ${destination}` });
    }
    summary.files += 1;
    summary.bytes += entry.size;
  }
  return summary;
}

/** Streams stdin into a sandbox file. */
export async function uploadStdin(
  sandbox: Sandbox,
  stdin: NodeJS.ReadableStream,
  target: string,
  progress: ProgressBar,
): Promise<CopySummary> {
  const source = Readable.toWeb(stdin as Readable) as ReadableStream<Uint8Array>;
  let bytes = 0;
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      bytes += chunk.byteLength;
      progress.add(chunk.byteLength);
      controller.enqueue(chunk);
    },
  });
  if (sandbox.capabilities.map.filesUpload !== "unsupported") {
    await sandbox.files.write(target, source.pipeThrough(counter));
  } else {
    const chunks: Uint8Array[] = [];
    for await (const chunk of source.pipeThrough(counter) as unknown as AsyncIterable<Uint8Array>)
      chunks.push(chunk);
    await sandbox.files.write(target, new Uint8Array(Buffer.concat(chunks)));
  }
  return { files: 1, directories: 0, bytes, skipped: [], target };
}

/** Streams a sandbox file to stdout. */
export async function downloadToStdout(
  sandbox: Sandbox,
  source: string,
  stdout: NodeJS.WritableStream,
): Promise<CopySummary> {
  const info = await sandbox.files.stat(source);
  if (info.type !== "file") {
    throw new SandboxError(
      "Validation",
      `${source} is a ${info.type}: only a file can be copied to stdout (for a directory: sbox exec ID -- tar c DIR)`,
    );
  }
  let bytes = 0;
  const sink = stdout as unknown as Writable;
  if (sandbox.capabilities.map.filesUpload !== "unsupported") {
    const reader = Readable.fromWeb(
      sandbox.files.readStream(source) as import("node:stream/web").ReadableStream,
    );
    for await (const chunk of reader as AsyncIterable<Buffer>) {
      bytes += chunk.byteLength;
      if (!sink.write(chunk)) await new Promise<void>((resolve) => sink.once("drain", () => resolve()));
    }
  } else {
    const data = await sandbox.files.read(source);
    bytes = data.byteLength;
    sink.write(data);
  }
  return { files: 1, directories: 0, bytes, skipped: [], target: "-" };
}
