import { createTool } from "@mastra/core/tools";
import { type SandboxOrTools, toolSetOf, toolsOf } from "../adapter-input.js";
import type { SandboxToolsOptions } from "../create-sandbox-tools.js";
import type { SandboxTool } from "../tool-types.js";

/** Options of {@link createMastraTools}. */
export interface MastraToolsOptions extends SandboxToolsOptions {
  /**
   * Who answers a rule that says `ask`. `"sdk"` (default without an `approve` hook): the tool's
   * `requireApproval` is true, so Mastra suspends the call for the application to approve. `"hook"`
   * (default with one): the policy's `approve` hook decides.
   */
  approval?: "sdk" | "hook" | undefined;
}

/** A Mastra tool (as `createTool` returns it). */
export type MastraTool = ReturnType<typeof createTool>;

function mastraTool(sandboxTool: SandboxTool, approval: "sdk" | "hook"): MastraTool {
  const { title: _title, ...annotations } = sandboxTool.annotations;
  return createTool({
    id: sandboxTool.name,
    description: sandboxTool.description,
    inputSchema: sandboxTool.inputSchema as never,
    mcp: { annotations: { title: sandboxTool.annotations.title, ...annotations } },
    ...(approval === "sdk"
      ? { requireApproval: async (input: unknown) => (await sandboxTool.decide(input)).action === "ask" }
      : {}),
    execute: async (input: unknown, context) => {
      const result = await sandboxTool.execute(input, {
        callId: context?.agent?.toolCallId,
        signal: context?.abortSignal,
        ...(approval === "sdk" ? { approved: true } : {}),
      });
      return result.text;
    },
  }) as unknown as MastraTool;
}

/**
 * The tools of a sandbox as Mastra tools (`createTool`), keyed by name, for `new Agent({ tools })`. Each
 * returns the bounded text result and carries its MCP annotations; `ask` rules use Mastra's
 * `requireApproval`.
 */
export function createMastraTools(
  source: SandboxOrTools,
  options: MastraToolsOptions = {},
): Record<string, MastraTool> {
  const approval = options.approval ?? (options.approve ? "hook" : "sdk");
  const tools: Record<string, MastraTool> = {};
  for (const sandboxTool of toolsOf(toolSetOf(source, options)))
    tools[sandboxTool.name] = mastraTool(sandboxTool, approval);
  return tools;
}
