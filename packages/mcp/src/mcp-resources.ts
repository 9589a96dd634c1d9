/**
 * The files of a session's sandbox as MCP resources (`sandbox://files/<path>`), read through the
 * `read_file` tool so the path rules and output limits apply. Listing creates no sandbox: before the
 * first call there is nothing to list.
 */
import {
  ErrorCode,
  McpError,
  type Resource,
  type ResourceTemplate,
} from "@modelcontextprotocol/sdk/types.js";
import type { SandboxTool } from "@sbox/tools";
import type { McpSandboxSession } from "./mcp-session.js";

const PREFIX = "sandbox://files/";

/** The template clients fill in to read any file. */
export const RESOURCE_TEMPLATE: ResourceTemplate = {
  uriTemplate: `${PREFIX}{+path}`,
  name: "sandbox-file",
  title: "A file in the session's sandbox",
  description: "A text file in the sandbox, by its path relative to the working directory.",
};

function uriOf(path: string): string {
  return PREFIX + path.split("/").map(encodeURIComponent).join("/");
}

/** Files at the top of the working directory (and one level down). */
export async function listFileResources(session: McpSandboxSession): Promise<Resource[]> {
  const current = session.existing();
  if (!current) return [];
  const list = (current.tools as { list_files?: SandboxTool<"list_files"> }).list_files;
  if (!list) return [];
  const result = await list.execute({ depth: 2 });
  const entries = (
    (result.data as { entries?: { path: string; type: string; size: number }[] } | undefined)?.entries ?? []
  ).filter((entry) => entry.type === "file");
  return entries
    .slice(0, 500)
    .map((entry) => ({ uri: uriOf(entry.path), name: entry.path, size: entry.size }));
}

/** Reads one file resource. */
export async function readFileResource(
  session: McpSandboxSession,
  uri: string,
): Promise<{ contents: { uri: string; mimeType: string; text: string }[] }> {
  if (!uri.startsWith(PREFIX)) throw new McpError(ErrorCode.InvalidParams, `not a sandbox file: ${uri}`);
  let path: string;
  try {
    path = uri.slice(PREFIX.length).split("/").map(decodeURIComponent).join("/");
  } catch {
    throw new McpError(ErrorCode.InvalidParams, `malformed resource uri: ${uri}`);
  }
  const { tools } = await session.current();
  const read = (tools as { read_file?: SandboxTool<"read_file"> }).read_file;
  if (!read) throw new McpError(ErrorCode.InvalidRequest, "reading files is denied by the policy");
  const result = await read.execute({ path });
  if (!result.ok) throw new McpError(ErrorCode.InvalidParams, result.text);
  const content = (result.data as { content?: string } | undefined)?.content ?? result.text;
  return { contents: [{ uri, mimeType: "text/plain", text: content }] };
}
