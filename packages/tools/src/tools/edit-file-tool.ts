import { SandboxError } from "@sbox/core";
import { z } from "zod";
import { boundText } from "../output/bounded-output.js";
import type { ResolvedPath } from "../policy/sandbox-paths.js";
import type { ToolDefinition } from "./tool-definition.js";
import type { EditFileInput } from "./tool-inputs.js";

function occurrences(text: string, needle: string): number {
  let count = 0;
  for (let index = text.indexOf(needle); index !== -1; index = text.indexOf(needle, index + needle.length))
    count++;
  return count;
}

/** `edit_file`: exact-string replacement, refusing ambiguous edits. */
export const editFileTool: ToolDefinition<"edit_file", { target: ResolvedPath }> = {
  name: "edit_file",
  description: () =>
    "Edit a text file by replacing an exact string with another. oldString must appear exactly once (include enough surrounding lines to make it unique), or set replaceAll to replace every occurrence. Whitespace and indentation must match the file exactly; read the file first.",
  schema: () =>
    z
      .strictObject({
        path: z.string().min(1).describe("The file to edit."),
        oldString: z.string().min(1).describe("The exact text to replace."),
        newString: z.string().describe("The text to put in its place."),
        replaceAll: z.boolean().optional().describe("Replace every occurrence instead of exactly one."),
      })
      .refine((input) => input.oldString !== input.newString, {
        message: "oldString and newString are the same",
      }) as z.ZodType<EditFileInput>,
  async check(input, context) {
    const target = await context.checkPath(input.path, "write");
    return { decision: { action: "allow", reason: "allowed" }, plan: { target } };
  },
  async run(input, context, plan) {
    const { sandbox, limits } = context;
    const info = await sandbox.files.stat(plan.target.real);
    if (info.type !== "file")
      throw new SandboxError("Validation", `${plan.target.lexical} is not a regular file`);
    const before = await sandbox.files.readText(plan.target.real);
    const count = occurrences(before, input.oldString);
    if (count === 0) {
      throw new SandboxError(
        "Validation",
        `oldString was not found in ${plan.target.lexical}; read the file and copy the text exactly`,
      );
    }
    if (count > 1 && !input.replaceAll) {
      throw new SandboxError(
        "Validation",
        `oldString appears ${count} times in ${plan.target.lexical}; add surrounding lines to make it unique, or set replaceAll`,
      );
    }
    const after = input.replaceAll
      ? before.split(input.oldString).join(input.newString)
      : before.replace(input.oldString, () => input.newString);
    await sandbox.files.write(plan.target.real, after);
    const at = after.indexOf(input.newString);
    const firstLine = before.slice(0, before.indexOf(input.oldString)).split("\n").length;
    const snippet = boundText(
      after
        .slice(Math.max(0, after.lastIndexOf("\n", at - 1) + 1))
        .split("\n")
        .slice(0, 12)
        .join("\n"),
      {
        maxBytes: Math.min(2048, limits.maxOutputBytes),
        maxLines: 12,
      },
    );
    return {
      text: `Replaced ${input.replaceAll ? count : 1} occurrence${count > 1 && input.replaceAll ? "s" : ""} in ${plan.target.lexical} (first at line ${firstLine}). The file now reads there:\n${snippet.text}`,
      data: { path: plan.target.lexical, replacements: input.replaceAll ? count : 1, line: firstLine },
    };
  },
};
