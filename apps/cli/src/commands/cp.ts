import { stat } from "node:fs/promises";
import { basename, join, posix, sep } from "node:path";
import type { Sandbox } from "@sbox/core";
import { SandboxError } from "@sbox/core";
import { stringOption } from "../args/parse-command-line.js";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { usageError } from "../args/usage-error.js";
import type { CliContext } from "../cli-context.js";
import { formatBytes } from "../output/format.js";
import { startProgressBar } from "../output/progress-bar.js";
import { NAME_OPTION, resolveSandboxName } from "../records/sandbox-names.js";
import type { CommandDefinition } from "./command-definition.js";
import { parseCopyEndpoint } from "./cp-endpoint.js";
import {
  type CopySummary,
  downloadPlan,
  downloadToStdout,
  planHostSource,
  planSandboxSource,
  uploadPlan,
  uploadStdin,
} from "./cp-transfer.js";

async function sandboxPathIsDir(sandbox: Sandbox, path: string): Promise<boolean | null> {
  try {
    return (await sandbox.files.stat(path)).type === "dir";
  } catch (error) {
    if (SandboxError.isInstance(error) && error.code === "NotFound") return null;
    throw error;
  }
}

async function hostPathIsDir(path: string): Promise<boolean | null> {
  try {
    return (await stat(path)).isDirectory();
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return null;
    throw error;
  }
}

function progressFor(context: CliContext, total: number) {
  // Only worth a bar when the transfer is large; it still appears only after 300 ms on a terminal.
  return startProgressBar(context.io.stderr, "copying", {
    enabled: context.io.stderr.isTTY === true && total >= 1024 * 1024,
    total,
  });
}

/** `sbox cp SRC DST`: copies files and directories between this machine and a sandbox. */
export const cpCommand: CommandDefinition = {
  name: "cp",
  summary: "copy files/directories between this machine and a sandbox (ID:/path)",
  usage: [
    "sbox cp [options] SRC ID:DEST",
    "sbox cp [options] ID:SRC DEST",
    "sbox cp - ID:FILE   |   sbox cp ID:FILE -",
  ],
  details:
    "Like `cp -r`: directories are copied recursively; when DEST is an existing directory the source is\n" +
    "copied into it. Files are streamed (any size, binary-safe) and keep their permission bits; symlinks and\n" +
    "special files are skipped with a warning. `-` streams stdin into a sandbox file or a sandbox file to\n" +
    "stdout. Ids may carry their provider (docker:abc:/path). Host paths with a colon need ./ or /.\n" +
    "With --name NAME, the sandbox side is written :/path (the sandbox created with --name NAME).",
  options: { name: NAME_OPTION },
  examples: [
    "sbox cp ./src local:3f2a:/workspace",
    "sbox cp local:3f2a:/workspace/out ./out",
    "sbox cp local:3f2a:/workspace/report.pdf - > report.pdf",
    "sbox cp --name web ./src :/workspace",
  ],
  async run(context, args) {
    const [sourceArg, destinationArg] = expectPositionals(args, "cp", ["SRC", "DEST"]);
    expectNoCommand(args, "cp");
    // With --name, `:/path` is a path in the named sandbox.
    const name = stringOption(args.values, "name");
    const named = name === undefined ? undefined : await resolveSandboxName(context, name);
    const side = (argument: string): string =>
      named !== undefined && argument.startsWith(":") ? `${named}${argument}` : argument;
    const source = parseCopyEndpoint(side(sourceArg!));
    const destination = parseCopyEndpoint(side(destinationArg!));
    let summary: CopySummary;
    if (source.kind === "sandbox" && destination.kind === "sandbox") {
      throw usageError("sbox cp: copying between two sandboxes is not supported; copy through this machine");
    }
    if (source.kind !== "sandbox" && destination.kind !== "sandbox") {
      throw usageError("sbox cp: one side must be a sandbox path, written ID:/path");
    }
    if (destination.kind === "sandbox") {
      const sandbox = await context.connect(destination.id);
      if (source.kind === "stdio") {
        const progress = progressFor(context, 0);
        try {
          summary = await uploadStdin(sandbox, context.io.stdin, destination.path, progress);
        } finally {
          progress.done();
        }
      } else if (source.kind === "host") {
        const plan = await context.waitFor(`reading ${source.path}`, () => planHostSource(source.path));
        const isDir = await sandboxPathIsDir(sandbox, destination.path);
        const into = isDir === true || (plan.rootType === "file" && destination.path.endsWith("/"));
        const target = into ? posix.join(destination.path, basename(source.path)) : destination.path;
        const progress = progressFor(context, plan.totalBytes);
        try {
          summary = await uploadPlan(sandbox, plan, target, progress);
        } finally {
          progress.done();
        }
        summary.target = `${destination.id}:${target}`;
      } else {
        throw usageError("sbox cp: unsupported combination");
      }
    } else if (source.kind === "sandbox") {
      const sandbox = await context.connect(source.id);
      if (destination.kind === "stdio") {
        summary = await downloadToStdout(sandbox, source.path, context.io.stdout);
      } else {
        const plan = await context.waitFor(`reading ${source.id}:${source.path}`, () =>
          planSandboxSource(sandbox, source.path),
        );
        const isDir = await hostPathIsDir(destination.path);
        const into =
          isDir === true ||
          (plan.rootType === "file" && (destination.path.endsWith("/") || destination.path.endsWith(sep)));
        const target = into
          ? join(destination.path, posix.basename(source.path.replace(/\/+$/, "")) || "root")
          : destination.path;
        const progress = progressFor(context, plan.totalBytes);
        try {
          summary = await downloadPlan(sandbox, plan, target, progress);
        } finally {
          progress.done();
        }
      }
    } else {
      throw usageError("sbox cp: one side must be a sandbox path, written ID:/path");
    }
    for (const skipped of summary.skipped) {
      context.note(`${context.err.yellow("warning")}: skipped ${skipped.path}: ${skipped.reason}`);
    }
    if (context.json) context.printJson(summary);
    else if (destination.kind !== "stdio" && context.io.stderr.isTTY) {
      context.note(
        context.err.dim(
          `copied ${summary.files} file(s), ${summary.directories} dir(s), ${formatBytes(summary.bytes)} to ${summary.target}`,
        ),
      );
    }
    return 0;
  },
};
