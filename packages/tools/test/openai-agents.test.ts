/**
 * The OpenAI Agents SDK's own runner with its ScriptedModel (from @openai/agents/testing), driving the
 * sandbox function tools, and its shell and apply_patch tools over SandboxShell and SandboxEditor,
 * against a real provider-local sandbox.
 */
import { Agent, applyPatchTool, run, shellTool } from "@openai/agents";
import { assistantMessage, functionCall, modelResponder, ScriptedModel } from "@openai/agents/testing";
import { afterAll, describe, expect, it } from "vitest";
import { createSandboxTools } from "../src/index.js";
import { createOpenAIAgentsTools, SandboxEditor, SandboxShell } from "../src/openai-agents/index.js";
import { AGENT_STEPS, expectTaskDone, FINAL_TEXT } from "./agent-script.js";
import { clientFor, localProvider, tempRoot } from "./helpers.js";

const root = tempRoot("openai");
const env = clientFor(localProvider(root.dir));
afterAll(async () => {
  await env.cleanup();
  root.cleanup();
});

/** Tool outputs in the runner's request to the model, in order. */
function outputsIn(input: unknown): string[] {
  if (!Array.isArray(input)) return [];
  const outputs: string[] = [];
  for (const item of input as { type?: string; output?: unknown }[]) {
    if (item.type === "function_call_result") {
      const output = item.output as { type?: string; text?: string } | string;
      outputs.push(typeof output === "string" ? output : (output.text ?? JSON.stringify(output)));
    } else if (item.type === "shell_call_output" || item.type === "apply_patch_call_output") {
      outputs.push(JSON.stringify(item));
    }
  }
  return outputs;
}

describe("OpenAI Agents runner with a ScriptedModel", () => {
  it("writes, runs, reads, edits and reruns a Python file through the function tools", async () => {
    const sandbox = await env.create();
    const model = new ScriptedModel(
      Array.from({ length: AGENT_STEPS.length + 1 }, () =>
        modelResponder((call) => {
          const done = outputsIn(call.request.input).length;
          const step = AGENT_STEPS[done];
          return step
            ? [functionCall(step.tool, step.input, { callId: `call-${done}` })]
            : [assistantMessage(FINAL_TEXT)];
        }),
      ),
    );
    const agent = new Agent({
      name: "coder",
      instructions: "Use the sandbox.",
      model,
      tools: createOpenAIAgentsTools(sandbox),
    });
    const result = await run(agent, "Write hello.py, run it, then make it print 48.", { maxTurns: 10 });
    expect(result.finalOutput).toBe(FINAL_TEXT);
    model.assertComplete();
    await expectTaskDone(sandbox, outputsIn(model.lastCall!.request.input));
    const offered = (model.firstCall!.request.tools ?? []).map((t) => (t as { name?: string }).name);
    expect(offered).toEqual(expect.arrayContaining(["run_command", "edit_file", "search_files"]));
  });

  it("the shell and apply_patch tools run through SandboxShell and SandboxEditor under the policy", async () => {
    const sandbox = await env.create();
    const set = createSandboxTools(sandbox, {
      policy: { commands: { deny: ["curl"] }, limits: { timeoutMs: 2000 } },
    });
    const createDiff = "+print('hello', 6 * 7)\n";
    const updateDiff = "@@\n-print('hello', 6 * 7)\n+print('hello', 6 * 8)\n";
    const steps = [
      {
        type: "apply_patch_call",
        callId: "p1",
        status: "completed",
        operation: { type: "create_file", path: "app/hello.py", diff: createDiff },
      },
      {
        type: "shell_call",
        callId: "s1",
        status: "completed",
        action: { commands: ["python3 app/hello.py", "curl http://127.0.0.1:9/", "sleep 30"] },
      },
      {
        type: "apply_patch_call",
        callId: "p2",
        status: "completed",
        operation: { type: "update_file", path: "app/hello.py", diff: updateDiff },
      },
      {
        type: "apply_patch_call",
        callId: "p3",
        status: "completed",
        operation: { type: "update_file", path: "../outside.py", diff: updateDiff },
      },
      {
        type: "shell_call",
        callId: "s2",
        status: "completed",
        action: { commands: ["python3 app/hello.py"] },
      },
    ];
    const model = new ScriptedModel(
      Array.from({ length: steps.length + 1 }, () =>
        modelResponder((call) => {
          const done = outputsIn(call.request.input).length;
          const step = steps[done];
          return step ? [step as never] : [assistantMessage("patched")];
        }),
      ),
    );
    const agent = new Agent({
      name: "coder",
      model,
      tools: [
        shellTool({ shell: new SandboxShell(set) }),
        applyPatchTool({ editor: new SandboxEditor(set) }),
      ],
    });
    const result = await run(agent, "patch it", { maxTurns: 10 });
    expect(result.finalOutput).toBe("patched");
    // The SDK's applyDiff makes a created file's lines without a final newline, and an update keeps that.
    expect((await sandbox.commands.run("cat app/hello.py")).stdout).toBe("print('hello', 6 * 8)");
    const outputs = outputsIn(model.lastCall!.request.input).map(
      (text) => JSON.parse(text) as Record<string, unknown>,
    );
    expect(outputs).toHaveLength(5);
    const shell1 = JSON.stringify(outputs[1]);
    expect(shell1).toContain("hello 42");
    expect(shell1).toContain("denied by policy");
    expect(shell1).toContain('"type":"timeout"');
    expect(JSON.stringify(outputs[3])).toContain("outside the allowed directory");
    expect(JSON.stringify(outputs[4])).toContain("hello 48");
  });

  it("an ask rule becomes a run interruption; the approved call then runs", async () => {
    const sandbox = await env.create();
    await sandbox.files.write("junk.txt", "x");
    const model = new ScriptedModel([
      [functionCall("remove_file", { path: "junk.txt" }, { callId: "r1" })],
      [assistantMessage("removed")],
    ]);
    const agent = new Agent({
      name: "cleaner",
      model,
      tools: createOpenAIAgentsTools(sandbox, { policy: { tools: { remove_file: "ask" } } }),
    });
    const first = await run(agent, "clean up");
    expect(first.interruptions).toHaveLength(1);
    expect(await sandbox.files.exists("junk.txt")).toBe(true);
    first.state.approve(first.interruptions[0]!);
    const second = await run(agent, first.state);
    expect(second.finalOutput).toBe("removed");
    expect(await sandbox.files.exists("junk.txt")).toBe(false);
  });
});
