/**
 * Mastra's own agent loop (`Agent.generate`) with its mock model (`MastraLanguageModelV2Mock` from
 * `@mastra/core/test-utils/llm-mock`), driving the sandbox tools on a real provider-local sandbox.
 */
import { Agent } from "@mastra/core/agent";
import { MastraLanguageModelV2Mock } from "@mastra/core/test-utils/llm-mock";
import { afterAll, describe, expect, it } from "vitest";
import { createMastraTools } from "../src/mastra/index.js";
import { AGENT_STEPS, expectTaskDone, FINAL_TEXT } from "./agent-script.js";
import { clientFor, localProvider, tempRoot } from "./helpers.js";

const root = tempRoot("mastra");
const env = clientFor(localProvider(root.dir));
afterAll(async () => {
  await env.cleanup();
  root.cleanup();
});

const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };

/** Tool results in a V2 prompt, in order. */
function toolResultsIn(prompt: unknown): string[] {
  const results: string[] = [];
  for (const message of prompt as { role: string; content: unknown }[]) {
    if (message.role !== "tool" || !Array.isArray(message.content)) continue;
    for (const part of message.content as { type: string; output?: { value?: unknown } }[]) {
      if (part.type === "tool-result") {
        const value = part.output?.value;
        results.push(typeof value === "string" ? value : JSON.stringify(value));
      }
    }
  }
  return results;
}

describe("Mastra Agent with MastraLanguageModelV2Mock", () => {
  it("writes, runs, reads, edits and reruns a Python file", async () => {
    const sandbox = await env.create();
    let lastPrompt: unknown = [];
    const respond = (options: { prompt: unknown }) => {
      lastPrompt = options.prompt;
      const done = toolResultsIn(options.prompt).length;
      return AGENT_STEPS[done] ? { done, step: AGENT_STEPS[done] } : { done, step: undefined };
    };
    const model = new MastraLanguageModelV2Mock({
      doGenerate: (async (options: { prompt: unknown }) => {
        const { done, step } = respond(options);
        return {
          content: step
            ? [
                {
                  type: "tool-call",
                  toolCallId: `call-${done}`,
                  toolName: step.tool,
                  input: JSON.stringify(step.input),
                },
              ]
            : [{ type: "text", text: FINAL_TEXT }],
          finishReason: step ? "tool-calls" : "stop",
          usage,
          warnings: [],
        };
      }) as never,
    });
    const agent = new Agent({
      id: "coder",
      name: "coder",
      instructions: "Use the sandbox.",
      model: model as never,
      tools: createMastraTools(sandbox),
    });
    const result = await agent.generate("Write hello.py, run it, then make it print 48.", { maxSteps: 10 });
    expect(result.text).toBe(FINAL_TEXT);
    await expectTaskDone(sandbox, toolResultsIn(lastPrompt));
  });
});
