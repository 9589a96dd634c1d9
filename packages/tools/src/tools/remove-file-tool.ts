import { SandboxError } from "@sbox/core";
import { z } from "zod";
import type { ResolvedPath } from "../policy/sandbox-paths.js";
import type { ToolDefinition } from "./tool-definition.js";
import type { RemoveFileInput } from "./tool-inputs.js";

/** `remove_file`: a file, a symlink (not its target) or, with recursive, a directory. */
export const removeFileTool: ToolDefinition<"remove_file", { target: ResolvedPath }> = {
  name: "remove_file",
  description: () =>
    "Remove a file or symlink in the sandbox (a symlink is removed itself, never its target). Set recursive to remove a directory and everything in it. This cannot be undone.",
  schema: () =>
    z.strictObject({
      path: z.string().min(1).describe("What to remove."),
      recursive: z.boolean().optional().describe("Remove a directory with all its content."),
    }) as z.ZodType<RemoveFileInput>,
  async check(input, context) {
    // The last component is not followed: removing a link removes the link.
    const target = await context.checkPath(input.path, "write", { followLast: false });
    const root = await context.paths.root();
    if (target.real === root.real) {
      return {
        decision: { action: "deny", reason: "the working root itself cannot be removed" },
        plan: { target },
      };
    }
    return { decision: { action: "allow", reason: "allowed" }, plan: { target } };
  },
  async run(input, context, plan) {
    const info = await context.sandbox.files.stat(plan.target.real);
    if (info.type === "dir" && !input.recursive) {
      throw new SandboxError(
        "Validation",
        `${plan.target.lexical} is a directory: set recursive to remove it`,
      );
    }
    await context.sandbox.files.remove(plan.target.real, { recursive: input.recursive ?? false });
    return { text: `Removed ${plan.target.lexical}.`, data: { path: plan.target.lexical, type: info.type } };
  },
};
