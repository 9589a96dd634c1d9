import { z } from "zod";
import type { ResolvedPath } from "../policy/sandbox-paths.js";
import type { ToolDefinition } from "./tool-definition.js";
import type { WriteFileInput } from "./tool-inputs.js";

/** `write_file`: creates or overwrites a text file (parent directories included). */
export const writeFileTool: ToolDefinition<"write_file", { target: ResolvedPath }> = {
  name: "write_file",
  description: () =>
    "Create or overwrite a text file in the sandbox with the given content; missing parent directories are created. Relative paths start at the sandbox's working directory. To change part of an existing file, prefer edit_file.",
  schema: () =>
    z.strictObject({
      path: z.string().min(1).describe("The file to write."),
      content: z
        .string()
        .max(16 * 1024 * 1024)
        .describe("The complete new content of the file."),
    }) as z.ZodType<WriteFileInput>,
  async check(input, context) {
    const target = await context.checkPath(input.path, "write");
    return { decision: { action: "allow", reason: "allowed" }, plan: { target } };
  },
  async run(input, context, plan) {
    await context.sandbox.files.write(plan.target.real, input.content);
    const bytes = Buffer.byteLength(input.content);
    return {
      text: `Wrote ${bytes} bytes to ${plan.target.lexical}.`,
      data: { path: plan.target.lexical, bytes },
    };
  },
};
