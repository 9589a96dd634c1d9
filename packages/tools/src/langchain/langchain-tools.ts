import { type DynamicStructuredTool, tool } from "@langchain/core/tools";
import { type SandboxOrTools, toolSetOf, toolsOf } from "../adapter-input.js";
import type { SandboxToolsOptions } from "../create-sandbox-tools.js";
import type { SandboxTool } from "../tool-types.js";

function langchainTool(sandboxTool: SandboxTool): DynamicStructuredTool {
  return tool(
    async (input: unknown, config?: { toolCall?: { id?: string }; signal?: AbortSignal }) => {
      const result = await sandboxTool.execute(input, {
        callId: config?.toolCall?.id,
        signal: config?.signal,
      });
      return result.text;
    },
    {
      name: sandboxTool.name,
      description: sandboxTool.description,
      // LangChain takes zod (v4) schemas and validates the model's input with them.
      schema: sandboxTool.inputSchema as never,
    },
  ) as unknown as DynamicStructuredTool;
}

/**
 * The tools of a sandbox as LangChain tools (`tool()` from `@langchain/core/tools`), for `createAgent`,
 * `bindTools` or LangGraph. Each returns the bounded text result; failures are results, not exceptions.
 */
export function createLangChainTools(
  source: SandboxOrTools,
  options?: SandboxToolsOptions,
): DynamicStructuredTool[] {
  return toolsOf(toolSetOf(source, options)).map(langchainTool);
}
