/**
 * `@sbox/mcp`: an MCP server that gives any MCP client a sandbox on any sbox provider, with the
 * @sbox/tools tool set and policy, over stdio or streamable HTTP.
 */
export type { HttpServeOptions, HttpServing } from "./http-transport.js";
export { isLoopbackHost, serveStreamableHttp } from "./http-transport.js";
export type { KeepOptions, McpServerEvent, SandboxMcpServerOptions } from "./mcp-options.js";
export type { McpToolResult } from "./mcp-results.js";
export { McpSandboxSession, MULTI_TOOLS } from "./mcp-session.js";
export type { SandboxMcpServer } from "./sandbox-mcp-server.js";
export { createSandboxMcpServer } from "./sandbox-mcp-server.js";
export type { StdioServing } from "./stdio-transport.js";
export { serveStdio } from "./stdio-transport.js";
