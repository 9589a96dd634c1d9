/**
 * LangChain's own agent loop (`createAgent` from `langchain`) with its fake chat model (`fakeModel` from
 * `@langchain/core/testing`), driving the sandbox tools on a real provider-local sandbox.
 */
import { AIMessage, ToolMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { createAgent } from "langchain";
import { afterAll, describe, expect, it } from "vitest";
import { createLangChainTools } from "../src/langchain/index.js";
import { AGENT_STEPS, expectTaskDone, FINAL_TEXT } from "./agent-script.js";
import { clientFor, localProvider, tempRoot } from "./helpers.js";

const root = tempRoot("langchain");
const env = clientFor(localProvider(root.dir));
afterAll(async () => {
  await env.cleanup();
  root.cleanup();
});

describe("LangChain createAgent with fakeModel", () => {
  it("writes, runs, reads, edits and reruns a Python file", async () => {
    const sandbox = await env.create();
    const model = fakeModel();
    AGENT_STEPS.forEach((step, index) => {
      model.respondWithTools([{ name: step.tool, args: step.input, id: `call-${index}` }]);
    });
    model.respond(new AIMessage(FINAL_TEXT));
    const agent = createAgent({ model, tools: createLangChainTools(sandbox) });
    const state = await agent.invoke({
      messages: [{ role: "user", content: "Write hello.py, run it, make it print 48." }],
    });
    const messages = state.messages;
    expect(messages.at(-1)?.content).toBe(FINAL_TEXT);
    const results = messages.filter((m) => ToolMessage.isInstance(m)).map((m) => String(m.content));
    await expectTaskDone(sandbox, results);
    expect(model.callCount).toBe(AGENT_STEPS.length + 1);
  });

  it("a refused call is a tool message the model reads, and the loop goes on", async () => {
    const sandbox = await env.create();
    const model = fakeModel()
      .respondWithTools([{ name: "write_file", args: { path: "../../escape.txt", content: "x" }, id: "w1" }])
      .respond(new AIMessage("understood"));
    const agent = createAgent({ model, tools: createLangChainTools(sandbox) });
    const state = await agent.invoke({ messages: [{ role: "user", content: "write outside" }] });
    const tool = state.messages.find((m) => ToolMessage.isInstance(m));
    expect(String(tool?.content)).toContain("outside the allowed directory");
    expect(state.messages.at(-1)?.content).toBe("understood");
  });
});
