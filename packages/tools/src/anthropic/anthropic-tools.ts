import type Anthropic from "@anthropic-ai/sdk";
import type { BetaRunnableTool } from "@anthropic-ai/sdk/lib/tools/BetaRunnableTool";
import { ToolError } from "@anthropic-ai/sdk/lib/tools/ToolError";
import { type SandboxOrTools, toolSetOf, toolsOf } from "../adapter-input.js";
import type { SandboxToolsOptions } from "../create-sandbox-tools.js";
import type { SandboxTool } from "../tool-types.js";

/** The sandbox tools in the shapes the Anthropic SDK takes. */
export interface AnthropicTools {
  /** Tool definitions for `client.messages.create({ tools })`. */
  readonly definitions: Anthropic.Messages.Tool[];
  /** Runnable tools for `client.beta.messages.toolRunner({ tools })`. */
  readonly runnable: BetaRunnableTool<unknown>[];
  /** Runs one `tool_use` block and answers with its `tool_result` block (`is_error` when it failed). */
  run(toolUse: {
    id: string;
    name: string;
    input: unknown;
  }): Promise<Anthropic.Messages.ToolResultBlockParam>;
  /** Runs every `tool_use` block of an assistant message, in order, for the next user turn. */
  results(message: {
    content: readonly { type: string }[];
  }): Promise<Anthropic.Messages.ToolResultBlockParam[]>;
}

function definitionOf(sandboxTool: SandboxTool): Anthropic.Messages.Tool {
  return {
    name: sandboxTool.name,
    description: sandboxTool.description,
    input_schema: sandboxTool.jsonSchema as Anthropic.Messages.Tool.InputSchema,
  };
}

/**
 * The tools of a sandbox for the Anthropic SDK: definitions for `messages.create`, a `run`/`results` pair
 * for a hand-written loop, and `runnable` tools for the SDK's `toolRunner`. A failed call is a tool result
 * with `is_error: true` carrying the reason, never a thrown error (unless the policy says so).
 */
export function createAnthropicTools(source: SandboxOrTools, options?: SandboxToolsOptions): AnthropicTools {
  const set = toolSetOf(source, options);
  const tools = toolsOf(set);
  const byName = new Map(tools.map((tool) => [tool.name as string, tool]));
  const run: AnthropicTools["run"] = async (toolUse) => {
    const sandboxTool = byName.get(toolUse.name);
    if (!sandboxTool) {
      return {
        type: "tool_result",
        tool_use_id: toolUse.id,
        is_error: true,
        content: `Error: unknown tool ${toolUse.name}`,
      };
    }
    const result = await sandboxTool.execute(toolUse.input, { callId: toolUse.id });
    return {
      type: "tool_result",
      tool_use_id: toolUse.id,
      content: result.text,
      ...(result.ok ? {} : { is_error: true }),
    };
  };
  return {
    definitions: tools.map(definitionOf),
    runnable: tools.map(
      (sandboxTool): BetaRunnableTool<unknown> => ({
        ...definitionOf(sandboxTool),
        // The sandbox tool validates its input itself, with a readable error for the model.
        parse: (content: unknown) => content,
        run: async (input, context) => {
          const result = await sandboxTool.execute(input, {
            callId: context?.toolUse.id,
            signal: context?.signal ?? undefined,
          });
          // A ToolError becomes a tool result with is_error: true and this text.
          if (!result.ok) throw new ToolError(result.text);
          return result.text;
        },
      }),
    ),
    run,
    async results(message) {
      const answers: Anthropic.Messages.ToolResultBlockParam[] = [];
      for (const block of message.content) {
        if (block.type !== "tool_use") continue;
        answers.push(await run(block as unknown as { id: string; name: string; input: unknown }));
      }
      return answers;
    },
  };
}
