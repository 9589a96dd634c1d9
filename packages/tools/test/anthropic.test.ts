/**
 * The Anthropic SDK's own client and tool runner (`client.beta.messages.toolRunner`) against a scripted
 * Messages API on loopback, driving the sandbox tools on a real provider-local sandbox; and a hand-written
 * `messages.create` loop with the tool definitions.
 */
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, describe, expect, it } from "vitest";
import { createAnthropicTools } from "../src/anthropic/index.js";
import { AGENT_STEPS, expectTaskDone, FINAL_TEXT } from "./agent-script.js";
import { clientFor, localProvider, tempRoot } from "./helpers.js";
import { startScriptedMessages, toolResultsOf } from "./scripted-messages-server.js";

const root = tempRoot("anthropic");
const env = clientFor(localProvider(root.dir));
afterAll(async () => {
  await env.cleanup();
  root.cleanup();
});

function scriptedTurn(body: Record<string, unknown>) {
  const done = toolResultsOf(body).length;
  const step = AGENT_STEPS[done];
  return step
    ? {
        content: [{ type: "tool_use", id: `toolu_${done}`, name: step.tool, input: step.input }],
        stop_reason: "tool_use",
      }
    : { content: [{ type: "text", text: FINAL_TEXT }], stop_reason: "end_turn" };
}

describe("Anthropic SDK", () => {
  it("toolRunner writes, runs, reads, edits and reruns a Python file", async () => {
    const sandbox = await env.create();
    const server = await startScriptedMessages(scriptedTurn);
    try {
      const client = new Anthropic({ apiKey: "test-key-not-a-secret", baseURL: server.url, maxRetries: 0 });
      const tools = createAnthropicTools(sandbox);
      const final = await client.beta.messages.toolRunner({
        model: "claude-test",
        max_tokens: 1024,
        messages: [{ role: "user", content: "Write hello.py, run it, then make it print 48." }],
        tools: tools.runnable,
        max_iterations: 10,
        thread: false,
      });
      expect(final.content).toEqual([expect.objectContaining({ type: "text", text: FINAL_TEXT })]);
      const last = server.requests.at(-1)!;
      const results = toolResultsOf(last);
      expect(results.every((result) => !result.isError)).toBe(true);
      await expectTaskDone(
        sandbox,
        results.map((result) => result.text),
      );
      const offered = (server.requests[0]!.tools as { name: string; input_schema: unknown }[]).map(
        (t) => t.name,
      );
      expect(offered).toEqual(expect.arrayContaining(["run_command", "edit_file"]));
    } finally {
      await server.close();
    }
  });

  it("a hand-written messages.create loop gets is_error results for refused calls", async () => {
    const sandbox = await env.create();
    const server = await startScriptedMessages((body) =>
      toolResultsOf(body).length === 0
        ? {
            content: [
              { type: "tool_use", id: "toolu_a", name: "read_file", input: { path: "/etc/shadow" } },
              { type: "tool_use", id: "toolu_b", name: "run_command", input: { command: "echo fine" } },
            ],
            stop_reason: "tool_use",
          }
        : { content: [{ type: "text", text: "ok" }], stop_reason: "end_turn" },
    );
    try {
      const client = new Anthropic({ apiKey: "test-key-not-a-secret", baseURL: server.url, maxRetries: 0 });
      const tools = createAnthropicTools(sandbox);
      const messages: Anthropic.Messages.MessageParam[] = [{ role: "user", content: "look around" }];
      for (let turn = 0; turn < 5; turn++) {
        const message = await client.messages.create({
          model: "claude-test",
          max_tokens: 256,
          messages,
          tools: tools.definitions,
        });
        messages.push({ role: "assistant", content: message.content });
        if (message.stop_reason !== "tool_use") break;
        messages.push({ role: "user", content: await tools.results(message) });
      }
      const results = toolResultsOf(server.requests.at(-1)!);
      expect(results[0]).toMatchObject({ isError: true });
      expect(results[0]!.text).toContain("outside the allowed directory");
      expect(results[1]).toMatchObject({ isError: false });
      expect(results[1]!.text).toContain("fine");
    } finally {
      await server.close();
    }
  });
});
