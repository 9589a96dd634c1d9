import type { Readable, Writable } from "node:stream";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { McpSandboxSession } from "./mcp-session.js";
import type { SandboxMcpServer } from "./sandbox-mcp-server.js";

/** A stdio session being served. */
export interface StdioServing {
  readonly session: McpSandboxSession;
  /** Resolves once the session has ended (its sandbox destroyed or kept). */
  readonly ended: Promise<void>;
  /** Ends the session now. */
  close(): Promise<void>;
}

/**
 * Serves one MCP session over stdio, as desktop clients start servers. The session ends when stdin ends
 * (the client exited or was killed), when `close()` is called, or when the transport fails.
 */
export async function serveStdio(
  server: SandboxMcpServer,
  streams: { stdin?: Readable | undefined; stdout?: Writable | undefined } = {},
): Promise<StdioServing> {
  const stdin = streams.stdin ?? process.stdin;
  const stdout = streams.stdout ?? process.stdout;
  const transport = new StdioServerTransport(stdin, stdout);
  const session = await server.connect(transport);
  let resolveEnded!: () => void;
  const ended = new Promise<void>((resolve) => {
    resolveEnded = resolve;
  });
  const finish = async (reason: string) => {
    await transport.close().catch(() => undefined);
    await session.end(reason);
    resolveEnded();
  };
  // The SDK's stdio transport does not notice the end of stdin; a killed client shows up only as that.
  stdin.once("end", () => void finish("stdin ended"));
  stdin.once("close", () => void finish("stdin closed"));
  stdin.once("error", () => void finish("stdin failed"));
  stdout.once("error", () => void finish("stdout failed"));
  return { session, ended, close: () => finish("closed by the server") };
}
