/** How tool outcomes and failures look to an MCP client: text content, structured output, `isError`. */
import { SandboxError } from "@sbox/core";
import type { ToolResult } from "@sbox/tools";

/** The output schema every sandbox tool declares (its `structuredContent`). */
export const RESULT_OUTPUT_SCHEMA = {
  type: "object",
  properties: {
    ok: { type: "boolean", description: "Whether the call did what was asked." },
    tool: { type: "string" },
    truncated: { type: "boolean", description: "Whether output was cut to the limits." },
    error: {
      type: "object",
      properties: { code: { type: "string" }, message: { type: "string" } },
      required: ["code", "message"],
    },
    data: { description: "The tool's structured output." },
  },
  required: ["ok", "tool", "truncated"],
} as const;

/** An MCP `CallToolResult`. */
export interface McpToolResult {
  [key: string]: unknown;
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown> | undefined;
  isError?: boolean | undefined;
}

/** A tool result for the client. */
export function fromToolResult(result: ToolResult): McpToolResult {
  return {
    content: [{ type: "text", text: result.text }],
    structuredContent: {
      ok: result.ok,
      tool: result.tool,
      truncated: result.truncated,
      ...(result.error ? { error: { code: result.error.code, message: result.error.message } } : {}),
      ...(result.data === undefined ? {} : { data: result.data }),
    },
    ...(result.ok ? {} : { isError: true }),
  };
}

/** A failure outside a tool (creating the sandbox, a limit): code and message, never a stack. */
export function failure(tool: string, error: unknown): McpToolResult {
  const code = SandboxError.isInstance(error) ? error.code : "Provider";
  const message = SandboxError.isInstance(error) ? error.message : "the call failed";
  return {
    content: [{ type: "text", text: `Error (${code}): ${message}` }],
    structuredContent: { ok: false, tool, truncated: false, error: { code, message } },
    isError: true,
  };
}

/** A plain successful result of a session tool (create/select/destroy sandboxes). */
export function success(tool: string, text: string, data?: unknown): McpToolResult {
  return {
    content: [{ type: "text", text }],
    structuredContent: { ok: true, tool, truncated: false, ...(data === undefined ? {} : { data }) },
  };
}
