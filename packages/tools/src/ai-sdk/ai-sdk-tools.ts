import { jsonSchema, type Tool, type ToolApprovalStatus, type ToolSet } from "ai";
import { type SandboxOrTools, type ToolSetOf, toolSetOf, toolsOf } from "../adapter-input.js";
import type { SandboxToolsOptions } from "../create-sandbox-tools.js";
import type { ToolPolicy } from "../policy/policy-types.js";
import type { SandboxTool, SandboxToolSet, ToolResult } from "../tool-types.js";
import type { ToolInputs } from "../tools/tool-inputs.js";

/** Options of {@link createAiSdkTools}. */
export interface AiSdkToolsOptions<TPolicy extends ToolPolicy = ToolPolicy>
  extends SandboxToolsOptions<TPolicy> {
  /**
   * Who answers a rule that says `ask`. `"sdk"` (default without an `approve` hook): the tool's
   * `needsApproval` is true, so `generateText`/`streamText` stop with a tool approval request and the call
   * runs once the application approves it. `"hook"` (default with one): the policy's `approve` hook decides
   * inside `execute`.
   */
  approval?: "sdk" | "hook" | undefined;
}

/** The AI SDK tool map of a tool set: same names, same optionality. */
export type AiSdkTools<S> = {
  [K in keyof S]: S[K] extends SandboxTool<infer N> ? Tool<ToolInputs[N], ToolResult> : never;
};

function aiSdkTool(sandboxTool: SandboxTool, approval: "sdk" | "hook"): Tool<unknown, ToolResult> {
  return {
    description: sandboxTool.description,
    title: sandboxTool.annotations.title,
    inputSchema: jsonSchema<unknown>(sandboxTool.jsonSchema as never),
    ...(approval === "sdk"
      ? { needsApproval: async (input: unknown) => (await sandboxTool.decide(input)).action === "ask" }
      : {}),
    execute: (input: unknown, options) =>
      sandboxTool.execute(input, {
        signal: options.abortSignal,
        callId: options.toolCallId,
        // In "sdk" mode the SDK only calls execute after its own approval of an `ask` call.
        ...(approval === "sdk" ? { approved: true } : {}),
      }),
    toModelOutput: ({ output }) =>
      output.ok ? { type: "text", value: output.text } : { type: "error-text", value: output.text },
  } as Tool<unknown, ToolResult>;
}

/**
 * The tools of a sandbox as an AI SDK `ToolSet` for `generateText`, `streamText` or a `ToolLoopAgent`.
 * Each tool's `needsApproval` follows the policy's `ask` rules; results reach the model as text (errors as
 * `error-text`), never as a thrown error unless the policy says `errors: "throw"`.
 */
export function createAiSdkTools<
  const T extends SandboxOrTools,
  const TPolicy extends ToolPolicy = Record<never, never>,
>(source: T, options: AiSdkToolsOptions<TPolicy> = {}): AiSdkTools<ToolSetOf<T, TPolicy>> {
  const set = toolSetOf(source, options as SandboxToolsOptions);
  const approval = options.approval ?? (options.approve ? "hook" : "sdk");
  const tools: ToolSet = {};
  for (const sandboxTool of toolsOf(set)) tools[sandboxTool.name] = aiSdkTool(sandboxTool, approval);
  return tools as AiSdkTools<ToolSetOf<T, TPolicy>>;
}

/**
 * A `toolApproval` function for `generateText`/`streamText` that applies the policy before anything runs:
 * denied calls become `denied` (the model sees the reason), `ask` calls need user approval, the rest need
 * none. The non-deprecated alternative to the tools' `needsApproval`.
 */
export function createAiSdkToolApproval(
  tools: SandboxToolSet,
): (options: { toolCall: { toolName: string; input: unknown } }) => Promise<ToolApprovalStatus> {
  const byName = new Map(toolsOf(tools).map((tool) => [tool.name as string, tool]));
  return async ({ toolCall }) => {
    const sandboxTool = byName.get(toolCall.toolName);
    if (!sandboxTool) return { type: "denied", reason: `unknown tool ${toolCall.toolName}` };
    const decision = await sandboxTool.decide(toolCall.input);
    if (decision.action === "deny") return { type: "denied", reason: decision.reason };
    if (decision.action === "ask") return { type: "user-approval", reason: decision.reason };
    return { type: "not-applicable" };
  };
}
