import { SandboxError } from "@sbox/core";
import { z } from "zod";
import { BoundedOutput } from "../output/bounded-output.js";
import type { ResolvedPath } from "../policy/sandbox-paths.js";
import type { ToolDefinition } from "./tool-definition.js";
import type { SearchFilesInput } from "./tool-inputs.js";

/** At most this many files are searched per call. */
const MAX_FILES = 20_000;
/** Bytes of file names one grep command line may carry (well under the 64 KiB command-line bound). */
const ARGV_BUDGET = 48 * 1024;

/** `search_files`: grep over regular files under a directory, symlinks never followed. */
export const searchFilesTool: ToolDefinition<"search_files", { target: ResolvedPath }> = {
  name: "search_files",
  description: ({ limits }) =>
    `Search file contents in the sandbox for a pattern (a basic regular expression, or a literal string with literal: true). Prints path:line:text for each match, at most ${limits.maxOutputLines} lines in all. glob restricts the file names searched, e.g. "*.py".`,
  schema: () =>
    z.strictObject({
      pattern: z.string().min(1).max(4096).describe("What to search for."),
      path: z
        .string()
        .min(1)
        .optional()
        .describe("Directory or file to search (default: the working directory)."),
      glob: z
        .string()
        .min(1)
        .regex(/^[^/]+$/, "glob matches file names, so it cannot contain '/'")
        .optional()
        .describe('Only search files whose name matches, e.g. "*.ts".'),
      ignoreCase: z.boolean().optional().describe("Match regardless of case."),
      literal: z.boolean().optional().describe("Treat the pattern as a literal string."),
    }) as z.ZodType<SearchFilesInput>,
  async check(input, context) {
    const target = await context.checkPath(input.path, "read");
    return { decision: { action: "allow", reason: "allowed" }, plan: { target } };
  },
  async run(input, context, plan, signal) {
    const { sandbox, limits, pathPolicy, paths } = context;
    const root = await paths.root();
    // Regular files only (-type f): symlinks are never followed out of the directory.
    const find = [
      "find",
      plan.target.real,
      "-type",
      "f",
      ...(input.glob ? ["-name", input.glob] : []),
      "-print0",
    ];
    let listing = "";
    let tooMany = false;
    const handle = sandbox.commands.run(find, {
      signal,
      collectOutput: false,
      onStdout: (chunk) => {
        if (tooMany) return;
        listing += chunk;
        if (listing.length > 8 * 1024 * 1024) tooMany = true;
      },
    });
    const listed = await handle;
    if (listed.exitCode !== 0 && listing === "") {
      throw new SandboxError("Provider", `find failed in ${plan.target.lexical} (exit ${listed.exitCode})`);
    }
    let files = listing.split("\0").filter((file) => file !== "");
    if (tooMany) files = files.slice(0, -1);
    let hidden = 0;
    files = files.filter((file) => {
      const shown = pathPolicy.visible(file, root);
      if (!shown) hidden++;
      return shown;
    });
    if (files.length > MAX_FILES) {
      files = files.slice(0, MAX_FILES);
      tooMany = true;
    }
    const output = new BoundedOutput({ maxBytes: limits.maxOutputBytes, maxLines: limits.maxOutputLines });
    const options = ["-n", "-H", "-s", ...(input.ignoreCase ? ["-i"] : []), ...(input.literal ? ["-F"] : [])];
    let matches = 0;
    const show = (path: string) =>
      root.real !== root.lexical && path.startsWith(`${root.real}/`)
        ? root.lexical + path.slice(root.real.length)
        : path;
    for (let start = 0; start < files.length; ) {
      let bytes = 0;
      let end = start;
      while (end < files.length && (end === start || bytes + files[end]!.length + 1 < ARGV_BUDGET)) {
        bytes += files[end]!.length + 1;
        end++;
      }
      const batch = files.slice(start, end);
      start = end;
      let pending = "";
      const result = await sandbox.commands.run(["grep", ...options, "-e", input.pattern, "--", ...batch], {
        signal,
        collectOutput: false,
        onStdout: (chunk) => {
          pending += chunk;
          const lines = pending.split("\n");
          pending = lines.pop() ?? "";
          for (const line of lines) {
            matches++;
            output.push(`${show(line)}\n`);
          }
        },
      });
      if (pending !== "") {
        matches++;
        output.push(`${show(pending)}\n`);
      }
      if (result.exitCode > 1 && matches === 0 && batch.length === files.length) {
        throw new SandboxError(
          "Validation",
          `grep rejected the pattern (exit ${result.exitCode}): ${result.stderr.trim()}`,
        );
      }
    }
    const bounded = output.result("matches");
    const notes = [
      matches === 0 ? `No matches in ${files.length} files.` : "",
      tooMany ? `(only the first ${files.length} files were searched; narrow path or glob)` : "",
      hidden > 0 ? `(${hidden} files hidden by the policy were not searched)` : "",
    ].filter(Boolean);
    return {
      text: [bounded.text.replace(/\n$/, ""), ...notes].filter(Boolean).join("\n"),
      truncated: bounded.truncated || tooMany,
      data: { matches, files: files.length, hidden },
    };
  },
};
