import { posix } from "node:path";
import type { DirEntry } from "@sbox/core";
import { z } from "zod";
import { boundText } from "../output/bounded-output.js";
import type { ResolvedPath } from "../policy/sandbox-paths.js";
import type { ToolDefinition } from "./tool-definition.js";
import type { ListFilesInput } from "./tool-inputs.js";

const MAX_ENTRIES = 2000;

/** `list_files`: a directory, optionally a few levels deep; symlinks are shown, never followed. */
export const listFilesTool: ToolDefinition<"list_files", { target: ResolvedPath }> = {
  name: "list_files",
  description: () =>
    "List a directory in the sandbox (default: the working directory): one entry per line, directories end with '/', files show their size, symlinks are marked and not followed. depth (1-5) lists subdirectories too.",
  schema: () =>
    z.strictObject({
      path: z.string().min(1).optional().describe("The directory to list (default: the working directory)."),
      depth: z.number().int().min(1).max(5).optional().describe("How many levels to list (default 1)."),
    }) as z.ZodType<ListFilesInput>,
  async check(input, context) {
    const target = await context.checkPath(input.path, "read");
    return { decision: { action: "allow", reason: "allowed" }, plan: { target } };
  },
  async run(input, context, plan) {
    const { sandbox, limits, pathPolicy, paths } = context;
    const root = await paths.root();
    const depth = input.depth ?? 1;
    const lines: string[] = [];
    const found: { path: string; type: string; size: number }[] = [];
    let hidden = 0;
    let capped = false;
    const queue: { dir: string; level: number }[] = [{ dir: plan.target.real, level: 1 }];
    while (queue.length > 0 && !capped) {
      const { dir, level } = queue.shift()!;
      let entries: DirEntry[];
      try {
        entries = await sandbox.files.list(dir);
      } catch (error) {
        if (dir === plan.target.real) throw error;
        lines.push(`${posix.relative(plan.target.real, dir)}/ (cannot be listed)`);
        continue;
      }
      entries.sort((a, b) => a.name.localeCompare(b.name));
      for (const entry of entries) {
        const full = posix.join(dir, entry.name);
        if (!pathPolicy.visible(full, root)) {
          hidden++;
          continue;
        }
        const relative = posix.relative(plan.target.real, full);
        found.push({ path: relative, type: entry.type, size: entry.size });
        if (entry.type === "dir") {
          lines.push(`${relative}/`);
          if (level < depth) queue.push({ dir: full, level: level + 1 });
        } else if (entry.type === "symlink") lines.push(`${relative} (symlink)`);
        else if (entry.type === "file") lines.push(`${relative} (${entry.size} bytes)`);
        else lines.push(`${relative} (special file)`);
        if (lines.length >= MAX_ENTRIES) {
          capped = true;
          break;
        }
      }
    }
    const notes = [
      capped ? `(stopped after ${MAX_ENTRIES} entries; list a subdirectory for more)` : "",
      hidden > 0 ? `(${hidden} entries hidden by the policy)` : "",
    ].filter(Boolean);
    const body = lines.length === 0 ? "(empty directory)" : lines.join("\n");
    const bounded = boundText([body, ...notes].join("\n"), {
      maxBytes: limits.maxOutputBytes,
      maxLines: limits.maxOutputLines,
    });
    return {
      text: bounded.text,
      truncated: bounded.truncated || capped,
      data: { path: plan.target.lexical, entries: found, hidden },
    };
  },
};
