import { SandboxError } from "@sbox/core";
import { z } from "zod";
import { BoundedOutput } from "../output/bounded-output.js";
import type { ResolvedPath } from "../policy/sandbox-paths.js";
import type { ToolDefinition } from "./tool-definition.js";
import type { RunCommandInput } from "./tool-inputs.js";

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `run_command`: a shell command line, with cwd, env, timeout and background. */
export const runCommandTool: ToolDefinition<"run_command", { cwd: ResolvedPath }> = {
  name: "run_command",
  description: ({ sandbox, limits }) =>
    [
      "Run a shell command line (sh -c) in the sandbox and get its exit code, stdout and stderr.",
      "A non-zero exit code is a normal result, not a failure of the tool.",
      `Output longer than ${limits.maxOutputBytes} bytes or ${limits.maxOutputLines} lines is cut in the middle (start and end kept); redirect big output to a file and search or read it in parts.`,
      `The command is killed after timeoutMs (default ${limits.timeoutMs} ms, at most ${limits.maxTimeoutMs} ms).`,
      sandbox.can("background")
        ? "Set background: true for servers and other long-running processes: the call returns the pid at once; redirect their output to a file to read it later."
        : "",
    ]
      .filter(Boolean)
      .join(" "),
  schema: ({ sandbox }) => {
    const base = {
      command: z
        .string()
        .min(1)
        .max(65_536)
        .describe("The shell command line, e.g. `python3 main.py --n 3`."),
      cwd: z
        .string()
        .min(1)
        .optional()
        .describe("Working directory (default: the sandbox's working directory)."),
      env: z
        .record(z.string().regex(ENV_KEY), z.string())
        .optional()
        .describe("Extra environment variables for this command."),
      timeoutMs: z
        .number()
        .int()
        .positive()
        .optional()
        .describe("Kill the command after this many milliseconds."),
    };
    const schema = sandbox.can("background")
      ? z.strictObject({
          ...base,
          background: z
            .boolean()
            .optional()
            .describe("Start it in the background and return its pid at once."),
        })
      : z.strictObject(base);
    return schema as z.ZodType<RunCommandInput>;
  },
  async check(input, context) {
    const decision = context.commandPolicy.check(input.command);
    // A denied command needs no further look at the sandbox.
    if (decision.action === "deny") return { decision, plan: { cwd: { lexical: "", real: "" } } };
    const cwd = await context.checkPath(input.cwd, "read");
    return { decision, plan: { cwd } };
  },
  async run(input, context, plan, signal) {
    const { sandbox, limits } = context;
    if (input.background) {
      if (!sandbox.can("background"))
        throw new SandboxError("NotSupported", "background commands are not supported here");
      const process = await sandbox.commands.spawn(input.command, {
        cwd: plan.cwd.real,
        env: input.env,
        signal,
      });
      return {
        text: `Started in the background with pid ${process.pid}.`,
        data: { pid: process.pid, background: true },
      };
    }
    const timeoutMs = Math.min(input.timeoutMs ?? limits.timeoutMs, limits.maxTimeoutMs);
    const budget = { maxBytes: limits.maxOutputBytes / 2, maxLines: limits.maxOutputLines / 2 };
    const stdout = new BoundedOutput(budget);
    const stderr = new BoundedOutput(budget);
    const started = Date.now();
    try {
      const result = await sandbox.commands.run(input.command, {
        cwd: plan.cwd.real,
        env: input.env,
        timeoutMs,
        signal,
        collectOutput: false,
        onStdout: (chunk) => stdout.push(chunk),
        onStderr: (chunk) => stderr.push(chunk),
      });
      return formatCommand(stdout, stderr, {
        header: `exit code ${result.exitCode}${result.signal ? ` (${result.signal})` : ""}, ${result.durationMs} ms`,
        exitCode: result.exitCode,
        signal: result.signal,
        durationMs: result.durationMs,
      });
    } catch (error) {
      if (SandboxError.isInstance(error) && (error.code === "Timeout" || error.code === "Aborted")) {
        const what =
          error.code === "Timeout"
            ? `The command did not finish within ${timeoutMs} ms and was killed with its whole process tree.`
            : "The command was aborted and killed with its whole process tree.";
        const output = formatCommand(stdout, stderr, {
          header: `${what} Output until then:`,
          exitCode: undefined,
          signal: undefined,
          durationMs: Date.now() - started,
        });
        return { ...output, error: { code: error.code, message: what } };
      }
      throw error;
    }
  },
};

/** Renders a command's bounded stdout and stderr under a header. */
export function formatCommand(
  stdout: BoundedOutput,
  stderr: BoundedOutput,
  meta: { header: string; exitCode: number | undefined; signal: string | undefined; durationMs: number },
): { text: string; data: unknown; truncated: boolean } {
  const out = stdout.result("stdout");
  const err = stderr.result("stderr");
  const parts = [meta.header];
  if (out.text !== "") parts.push(`--- stdout ---\n${out.text.replace(/\n$/, "")}`);
  if (err.text !== "") parts.push(`--- stderr ---\n${err.text.replace(/\n$/, "")}`);
  if (out.text === "" && err.text === "") parts.push("(no output)");
  return {
    text: parts.join("\n"),
    truncated: out.truncated || err.truncated,
    data: {
      exitCode: meta.exitCode,
      signal: meta.signal,
      durationMs: meta.durationMs,
      stdout: out.text,
      stderr: err.text,
      stdoutBytes: out.totalBytes,
      stderrBytes: err.totalBytes,
      truncated: out.truncated || err.truncated,
    },
  };
}
