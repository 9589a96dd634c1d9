/**
 * The multi-step task every framework's agent loop is driven through: the scripted model writes a Python
 * file, runs it, reads the output, edits the file and runs it again.
 */
import type { Sandbox } from "@sbox/core";
import { expect } from "vitest";

/** One tool call of the script. */
export interface ScriptStep {
  readonly tool: string;
  readonly input: Record<string, unknown>;
}

/** The tool calls, in order. */
export const AGENT_STEPS: readonly ScriptStep[] = [
  { tool: "write_file", input: { path: "app/hello.py", content: "print('hello', 6 * 7)\n" } },
  { tool: "run_command", input: { command: "python3 app/hello.py > app/out.txt" } },
  { tool: "read_file", input: { path: "app/out.txt" } },
  { tool: "edit_file", input: { path: "app/hello.py", oldString: "6 * 7", newString: "6 * 8" } },
  { tool: "run_command", input: { command: "python3 app/hello.py" } },
];

/** The model's last words. */
export const FINAL_TEXT = "The script now prints hello 48.";

/** Checks the sandbox's real state (through commands) and the tool results the model received. */
export async function expectTaskDone(sandbox: Sandbox, results: readonly string[]): Promise<void> {
  expect((await sandbox.commands.run("cat app/hello.py")).stdout).toBe("print('hello', 6 * 8)\n");
  expect((await sandbox.commands.run("cat app/out.txt")).stdout).toBe("hello 42\n");
  expect(results).toHaveLength(AGENT_STEPS.length);
  expect(results[0]).toContain("Wrote 22 bytes to");
  expect(results[1]).toMatch(/^exit code 0/);
  expect(results[2]).toBe("hello 42\n");
  expect(results[3]).toContain("Replaced 1 occurrence");
  expect(results[4]).toMatch(/^exit code 0[\s\S]*--- stdout ---\nhello 48$/);
}
