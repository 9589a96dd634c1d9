import { SandboxError } from "@sbox/core";
import { z } from "zod";
import { BoundedOutput } from "../output/bounded-output.js";
import type { ResolvedPath } from "../policy/sandbox-paths.js";
import type { ToolDefinition } from "./tool-definition.js";
import type { ReadFileInput } from "./tool-inputs.js";

/** Files up to this size are read in one call; larger ones are streamed through the bounded collector. */
const WHOLE_READ_LIMIT = 8 * 1024 * 1024;

/** Feeds text into `output`, keeping only lines `start..end` (1-based, inclusive). */
class LineWindow {
  #line = 1;
  constructor(
    readonly output: BoundedOutput,
    readonly start: number,
    readonly end: number,
  ) {}

  push(text: string): void {
    let rest = text;
    while (rest !== "") {
      if (this.#line > this.end) return;
      const newline = rest.indexOf("\n");
      const piece = newline === -1 ? rest : rest.slice(0, newline + 1);
      if (this.#line >= this.start) this.output.push(piece);
      rest = rest.slice(piece.length);
      if (newline !== -1) this.#line++;
    }
  }
}

/** `read_file`: a text file, whole or a line range, bounded. */
export const readFileTool: ToolDefinition<"read_file", { target: ResolvedPath }> = {
  name: "read_file",
  description: ({ limits }) =>
    `Read a text file in the sandbox. Relative paths start at the sandbox's working directory. Use startLine/endLine (1-based, inclusive) for a part of a big file; more than ${limits.maxOutputBytes} bytes or ${limits.maxOutputLines} lines are cut in the middle.`,
  schema: () =>
    z
      .strictObject({
        path: z.string().min(1).describe("The file to read."),
        startLine: z.number().int().min(1).optional().describe("First line to return (1-based)."),
        endLine: z.number().int().min(1).optional().describe("Last line to return (inclusive)."),
      })
      .refine((input) => input.endLine === undefined || input.endLine >= (input.startLine ?? 1), {
        message: "endLine must not be before startLine",
      }) as z.ZodType<ReadFileInput>,
  async check(input, context) {
    const target = await context.checkPath(input.path, "read");
    return { decision: { action: "allow", reason: "allowed" }, plan: { target } };
  },
  async run(input, context, plan) {
    const { sandbox, limits } = context;
    const info = await sandbox.files.stat(plan.target.real);
    if (info.type === "dir") {
      throw new SandboxError("Validation", `${plan.target.lexical} is a directory: use list_files`);
    }
    // A FIFO or device would block or never end; only regular files are read.
    if (info.type !== "file") {
      throw new SandboxError("Validation", `${plan.target.lexical} is not a regular file, so it is not read`);
    }
    const output = new BoundedOutput({ maxBytes: limits.maxOutputBytes, maxLines: limits.maxOutputLines });
    const window = new LineWindow(output, input.startLine ?? 1, input.endLine ?? Number.POSITIVE_INFINITY);
    const decoder = new TextDecoder("utf-8");
    let binary = false;
    const feed = (bytes: Uint8Array, final: boolean) => {
      if (!binary && bytes.subarray(0, 8192).includes(0)) binary = true;
      if (!binary) window.push(decoder.decode(bytes, { stream: !final }));
    };
    if (info.size <= WHOLE_READ_LIMIT) feed(await sandbox.files.read(plan.target.real), true);
    else {
      const reader = sandbox.files.readStream(plan.target.real).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        feed(value, false);
        if (binary) {
          await reader.cancel();
          break;
        }
      }
      if (!binary) window.push(decoder.decode());
    }
    if (binary) {
      return {
        text: `${plan.target.lexical} is a binary file of ${info.size} bytes; it is not shown. Use run_command (e.g. xxd or od) to inspect it.`,
        data: { path: plan.target.lexical, size: info.size, binary: true },
      };
    }
    const result = output.result("file");
    const text = result.text === "" ? "(empty)" : result.text;
    return {
      text,
      truncated: result.truncated,
      data: {
        path: plan.target.lexical,
        content: result.text,
        size: info.size,
        lines: result.totalLines,
        truncated: result.truncated,
      },
    };
  },
};
