import { SandboxError } from "@sbox/core";
import { z } from "zod";
import { boundText } from "../output/bounded-output.js";
import type { ToolDefinition } from "./tool-definition.js";
import type { RunCodeInput } from "./tool-inputs.js";

/** `run_code`: the sandbox's code interpreter. */
export const runCodeTool: ToolDefinition<"run_code"> = {
  name: "run_code",
  description: ({ limits }) =>
    `Run a snippet of code in the sandbox's code interpreter (Python by default) and get its results, printed output and error. Output beyond ${limits.maxOutputBytes} bytes is cut in the middle.`,
  schema: () =>
    z.strictObject({
      code: z.string().min(1).max(1_000_000).describe("The code to run."),
      language: z
        .string()
        .min(1)
        .optional()
        .describe('The language, e.g. "python" (default) or "javascript".'),
    }) as z.ZodType<RunCodeInput>,
  async run(input, context) {
    const { sandbox, limits } = context;
    if (!sandbox.can("codeInterpreter"))
      throw new SandboxError("NotSupported", "code.run is not supported here");
    const result = await sandbox.code.run(input.code, { language: input.language });
    const body = [
      result.results.length > 0 ? `results: ${JSON.stringify(result.results)}` : "",
      result.logs.stdout ? `--- stdout ---\n${result.logs.stdout}` : "",
      result.logs.stderr ? `--- stderr ---\n${result.logs.stderr}` : "",
      result.error ? `--- error ---\n${JSON.stringify(result.error)}` : "",
    ]
      .filter(Boolean)
      .join("\n");
    const bounded = boundText(body || "(no output)", {
      maxBytes: limits.maxOutputBytes,
      maxLines: limits.maxOutputLines,
    });
    return {
      text: bounded.text,
      truncated: bounded.truncated,
      data: { text: bounded.text, failed: result.error !== undefined },
    };
  },
};
