/**
 * The AI SDK's own loop (`generateText` with `stopWhen`) and its mock language model, driving the sandbox
 * tools against a real provider-local sandbox.
 */
import type { LanguageModelV4CallOptions, LanguageModelV4GenerateResult } from "@ai-sdk/provider";
import { generateText, isStepCount, type ModelMessage } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { afterAll, describe, expect, it } from "vitest";
import { createAiSdkToolApproval, createAiSdkTools } from "../src/ai-sdk/index.js";
import { createSandboxTools } from "../src/index.js";
import { AGENT_STEPS, expectTaskDone, FINAL_TEXT, type ScriptStep } from "./agent-script.js";
import { clientFor, localProvider, tempRoot } from "./helpers.js";

const root = tempRoot("ai-sdk");
const env = clientFor(localProvider(root.dir));
afterAll(async () => {
  await env.cleanup();
  root.cleanup();
});

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 10, text: 10, reasoning: undefined },
};

function toolCall(step: ScriptStep, index: number): LanguageModelV4GenerateResult {
  return {
    content: [
      {
        type: "tool-call",
        toolCallId: `call-${index}`,
        toolName: step.tool,
        input: JSON.stringify(step.input),
      },
    ],
    finishReason: { unified: "tool-calls", raw: undefined },
    usage,
    warnings: [],
  };
}

function finalText(text: string): LanguageModelV4GenerateResult {
  return {
    content: [{ type: "text", text }],
    finishReason: { unified: "stop", raw: undefined },
    usage,
    warnings: [],
  };
}

/** Tool results as the model saw them in its prompt. */
function toolResultsIn(prompt: LanguageModelV4CallOptions["prompt"]): string[] {
  const results: string[] = [];
  for (const message of prompt) {
    if (message.role !== "tool") continue;
    for (const part of message.content) {
      if (part.type !== "tool-result") continue;
      const output = part.output as { type: string; value: unknown };
      results.push(String(output.value));
    }
  }
  return results;
}

describe("AI SDK generateText loop with MockLanguageModelV4", () => {
  it("writes, runs, reads, edits and reruns a Python file", async () => {
    const sandbox = await env.create();
    const model = new MockLanguageModelV4({
      doGenerate: async (options) => {
        const done = toolResultsIn(options.prompt).length;
        const step = AGENT_STEPS[done];
        return step ? toolCall(step, done) : finalText(FINAL_TEXT);
      },
    });
    const result = await generateText({
      model,
      tools: createAiSdkTools(sandbox),
      stopWhen: isStepCount(10),
      prompt: "Write hello.py, run it, then make it print 48.",
    });
    expect(result.text).toBe(FINAL_TEXT);
    expect(model.doGenerateCalls).toHaveLength(AGENT_STEPS.length + 1);
    const seen = toolResultsIn(model.doGenerateCalls.at(-1)!.prompt);
    await expectTaskDone(sandbox, seen);
    // The tools were offered to the model with their JSON schemas.
    const offered = model.doGenerateCalls[0]!.tools?.map((tool) => tool.name) ?? [];
    expect(offered).toEqual(expect.arrayContaining(["run_command", "read_file", "edit_file", "expose_port"]));
    expect(offered).not.toContain("remove_file");
  });

  it("an ask rule stops the loop with an approval request; the approved call then runs", async () => {
    const sandbox = await env.create();
    await sandbox.files.write("junk.txt", "x");
    const step: ScriptStep = { tool: "remove_file", input: { path: "junk.txt" } };
    const model = new MockLanguageModelV4({
      doGenerate: async (options) =>
        toolResultsIn(options.prompt).length === 0 ? toolCall(step, 0) : finalText("removed"),
    });
    const tools = createAiSdkTools(sandbox, { policy: { tools: { remove_file: "ask" } } });
    const first = await generateText({ model, tools, stopWhen: isStepCount(5), prompt: "clean up" });
    const request = first.content.find((part) => part.type === "tool-approval-request");
    expect(request).toBeDefined();
    expect(await sandbox.files.exists("junk.txt")).toBe(true);
    const messages: ModelMessage[] = [
      { role: "user", content: "clean up" },
      ...first.response.messages,
      {
        role: "tool",
        content: [
          {
            type: "tool-approval-response",
            approvalId: (request as { approvalId: string }).approvalId,
            approved: true,
          },
        ],
      },
    ];
    const second = await generateText({ model, tools, stopWhen: isStepCount(5), messages });
    expect(second.text).toBe("removed");
    expect(await sandbox.files.exists("junk.txt")).toBe(false);
  });

  it("a denied call reaches the model as an error it can read, and the loop goes on", async () => {
    const sandbox = await env.create();
    const set = createSandboxTools(sandbox, { policy: { commands: { deny: ["curl"] } } });
    const model = new MockLanguageModelV4({
      doGenerate: async (options) =>
        toolResultsIn(options.prompt).length === 0
          ? toolCall({ tool: "run_command", input: { command: "curl http://127.0.0.1:9/x" } }, 0)
          : finalText("ok, no network"),
    });
    const result = await generateText({
      model,
      tools: createAiSdkTools(set),
      toolApproval: createAiSdkToolApproval(set),
      stopWhen: isStepCount(5),
      prompt: "fetch it",
    });
    expect(result.text).toBe("ok, no network");
    const prompt = JSON.stringify(model.doGenerateCalls.at(-1)!.prompt);
    expect(prompt).toContain('matches the denied command \\"curl\\"');
  });
});
