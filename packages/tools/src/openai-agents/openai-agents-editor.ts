import { type ApplyPatchOperation, type ApplyPatchResult, applyDiff, type Editor } from "@openai/agents";
import { SandboxError } from "@sbox/core";
import { type SandboxOrTools, toolSetOf } from "../adapter-input.js";
import { type SandboxToolsOptions, toolContextOf } from "../create-sandbox-tools.js";
import { PathDenied } from "../policy/path-rules.js";
import type { SandboxTool, SandboxToolSet } from "../tool-types.js";

type Operation<T extends ApplyPatchOperation["type"]> = Extract<ApplyPatchOperation, { type: T }>;

function failed(output: string): ApplyPatchResult {
  return { status: "failed", output };
}

/**
 * The OpenAI Agents SDK's `Editor` (for `applyPatchTool({ editor })`) over a sandbox: V4A diffs applied
 * with the SDK's own `applyDiff`, files written through `write_file` and deleted through `remove_file`, so
 * the path rules, approval and audit apply. A refused or failing edit is a `failed` result with the reason.
 */
export class SandboxEditor implements Editor {
  readonly #set: SandboxToolSet & {
    write_file?: SandboxTool<"write_file">;
    remove_file?: SandboxTool<"remove_file">;
  };

  constructor(source: SandboxOrTools, options?: SandboxToolsOptions) {
    this.#set = toolSetOf(source, options);
  }

  async #write(path: string, content: string): Promise<ApplyPatchResult> {
    if (!this.#set.write_file) return failed("writing files is denied by the policy");
    const result = await this.#set.write_file.execute({ path, content });
    return result.ok ? { status: "completed", output: result.text } : failed(result.text);
  }

  async #read(path: string): Promise<string> {
    const context = toolContextOf(this.#set);
    const target = await context.checkPath(path, "write");
    return context.sandbox.files.readText(target.real);
  }

  /** Creates a file from a create-file diff (every line starts with `+`). */
  async createFile(operation: Operation<"create_file">): Promise<ApplyPatchResult> {
    let content: string;
    try {
      content = applyDiff("", operation.diff, "create");
    } catch (error) {
      return failed(`the diff could not be applied: ${(error as Error).message}`);
    }
    return this.#write(operation.path, content);
  }

  /** Applies an update diff to an existing file, optionally moving it. */
  async updateFile(operation: Operation<"update_file">): Promise<ApplyPatchResult> {
    let before: string;
    try {
      before = await this.#read(operation.path);
    } catch (error) {
      if (error instanceof PathDenied) return failed(`denied by policy: ${error.message}`);
      return failed(SandboxError.isInstance(error) ? error.message : `${operation.path} could not be read`);
    }
    let after: string;
    try {
      after = applyDiff(before, operation.diff);
    } catch (error) {
      return failed(`the diff does not apply to ${operation.path}: ${(error as Error).message}`);
    }
    const target = operation.moveTo ?? operation.path;
    const written = await this.#write(target, after);
    if (
      written.status === "failed" ||
      operation.moveTo === undefined ||
      operation.moveTo === operation.path
    ) {
      return written;
    }
    const removed = await this.deleteFile({ type: "delete_file", path: operation.path });
    return removed.status === "failed"
      ? removed
      : { status: "completed", output: `Moved ${operation.path} to ${target}.` };
  }

  /** Deletes a file. */
  async deleteFile(operation: Operation<"delete_file">): Promise<ApplyPatchResult> {
    if (!this.#set.remove_file)
      return failed("removing files is not enabled by the policy (remove_file is destructive)");
    const result = await this.#set.remove_file.execute({ path: operation.path });
    return result.ok ? { status: "completed", output: result.text } : failed(result.text);
  }
}
