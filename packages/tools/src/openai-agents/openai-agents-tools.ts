import { type FunctionTool, tool } from "@openai/agents";
import { type SandboxOrTools, toolSetOf, toolsOf } from "../adapter-input.js";
import type { SandboxToolsOptions } from "../create-sandbox-tools.js";
import type { SandboxTool } from "../tool-types.js";

/** Options of {@link createOpenAIAgentsTools}. */
export interface OpenAIAgentsToolsOptions extends SandboxToolsOptions {
  /**
   * Who answers a rule that says `ask`. `"sdk"` (default without an `approve` hook): the tool's
   * `needsApproval` is true, so the run stops with an interruption the application approves or rejects.
   * `"hook"` (default with one): the policy's `approve` hook decides.
   */
  approval?: "sdk" | "hook" | undefined;
}

function agentsTool(sandboxTool: SandboxTool, approval: "sdk" | "hook"): FunctionTool {
  const schema = sandboxTool.jsonSchema as { properties?: Record<string, unknown>; required?: string[] };
  const options = {
    name: sandboxTool.name,
    description: sandboxTool.description,
    // Non-strict: optional fields stay optional. The sandbox tool validates the input itself.
    strict: false,
    parameters: {
      ...sandboxTool.jsonSchema,
      type: "object",
      properties: (schema.properties ?? {}) as never,
      required: schema.required ?? [],
      additionalProperties: true,
    },
    ...(approval === "sdk"
      ? {
          needsApproval: async (_context: unknown, input: unknown) =>
            (await sandboxTool.decide(input)).action === "ask",
        }
      : {}),
    execute: async (
      input: unknown,
      _context: unknown,
      details?: { toolCall?: { callId?: string }; signal?: AbortSignal },
    ) => {
      const result = await sandboxTool.execute(input, {
        callId: details?.toolCall?.callId,
        signal: details?.signal,
        ...(approval === "sdk" ? { approved: true } : {}),
      });
      return result.text;
    },
  };
  // The options are the non-strict JSON-schema variant of tool(); its overloads cannot infer that here.
  return tool(options as unknown as Parameters<typeof tool>[0]) as FunctionTool;
}

/**
 * The tools of a sandbox as OpenAI Agents SDK function tools, for `new Agent({ tools })`. Each returns the
 * bounded text result; `ask` rules become the SDK's approval interruptions.
 */
export function createOpenAIAgentsTools(
  source: SandboxOrTools,
  options: OpenAIAgentsToolsOptions = {},
): FunctionTool[] {
  const set = toolSetOf(source, options);
  const approval = options.approval ?? (options.approve ? "hook" : "sdk");
  return toolsOf(set).map((sandboxTool) => agentsTool(sandboxTool, approval));
}
