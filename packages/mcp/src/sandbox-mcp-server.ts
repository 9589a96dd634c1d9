import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { createSandboxClient, type SandboxClient, SandboxError } from "@sbox/core";
import { describeSandboxTools } from "@sbox/tools";
import type { SandboxMcpServerOptions } from "./mcp-options.js";
import { listFileResources, RESOURCE_TEMPLATE, readFileResource } from "./mcp-resources.js";
import { RESULT_OUTPUT_SCHEMA } from "./mcp-results.js";
import { McpSandboxSession, MULTI_TOOLS } from "./mcp-session.js";

/** A server that gives each MCP session its own sandbox. */
export interface SandboxMcpServer {
  /** The tools every session lists. */
  readonly tools: readonly Tool[];
  /** Serves one MCP session over `transport`; the session ends (sandbox destroyed or kept) when it closes. */
  connect(transport: Transport): Promise<McpSandboxSession>;
  /** Sessions that have not ended. */
  readonly sessions: ReadonlySet<McpSandboxSession>;
  /** Ends every session and disposes the client the server made. */
  close(): Promise<void>;
}

const SESSION_TOOLS: Tool[] = [
  {
    name: "create_sandbox",
    title: "Create a sandbox",
    description:
      "Create another sandbox in this session and make it the current one (tools act on the current sandbox).",
    inputSchema: { type: "object", properties: {}, additionalProperties: false },
    annotations: {
      title: "Create a sandbox",
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: false,
    },
  },
  {
    name: "list_sandboxes",
    title: "List sandboxes",
    description: "List this session's sandboxes and which one is current.",
    inputSchema: { type: "object", properties: {}, additionalProperties: false },
    annotations: {
      title: "List sandboxes",
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
  },
  {
    name: "select_sandbox",
    title: "Select a sandbox",
    description: "Make one of this session's sandboxes (by id from list_sandboxes) the current one.",
    inputSchema: {
      type: "object",
      properties: { id: { type: "string" } },
      required: ["id"],
      additionalProperties: false,
    },
    annotations: {
      title: "Select a sandbox",
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
  },
  {
    name: "destroy_sandbox",
    title: "Destroy a sandbox",
    description: "Destroy one of this session's sandboxes with everything in it.",
    inputSchema: {
      type: "object",
      properties: { id: { type: "string" } },
      required: ["id"],
      additionalProperties: false,
    },
    annotations: {
      title: "Destroy a sandbox",
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
      openWorldHint: false,
    },
  },
];

/**
 * Creates the MCP server: the @sbox/tools set of the provider's capabilities (only the tools the provider
 * supports, with MCP annotations and structured output), sandbox files as resources, and one sandbox per
 * session — created on the first call, destroyed when the session ends, or kept and recorded by a manager.
 */
export function createSandboxMcpServer(options: SandboxMcpServerOptions): SandboxMcpServer {
  if ((options.client === undefined) === (options.provider === undefined)) {
    throw new SandboxError("Validation", "createSandboxMcpServer needs exactly one of client and provider");
  }
  const max = options.maxConcurrentCalls ?? 4;
  if (!Number.isInteger(max) || max < 1)
    throw new SandboxError("Validation", "maxConcurrentCalls must be a positive integer");
  const ownClient = options.client === undefined;
  const client: SandboxClient = options.client ?? createSandboxClient({ provider: options.provider! });
  const tools: Tool[] = describeSandboxTools(client.capabilities, { policy: options.policy }).map((info) => ({
    name: info.name,
    title: info.annotations.title,
    description: info.description,
    inputSchema: info.jsonSchema as Tool["inputSchema"],
    outputSchema: RESULT_OUTPUT_SCHEMA as unknown as Tool["outputSchema"],
    annotations: { ...info.annotations },
  }));
  if (options.multi) tools.push(...SESSION_TOOLS);
  const names = new Set(tools.map((tool) => tool.name));
  const sessions = new Set<McpSandboxSession>();

  return {
    tools,
    sessions,
    async connect(transport) {
      const session = new McpSandboxSession(client, options);
      sessions.add(session);
      const server = new Server(
        { name: options.name ?? "sbox", version: options.version ?? "0.1.0" },
        {
          capabilities: { tools: {}, resources: {} },
          instructions:
            "Each session has its own sandbox, created on the first tool call and destroyed when the session ends. Tools act on it; its files are also resources (sandbox://files/...).",
        },
      );
      server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
      server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
        const name = request.params.name;
        if (!names.has(name) || (!options.multi && (MULTI_TOOLS as readonly string[]).includes(name))) {
          throw new McpError(ErrorCode.InvalidParams, `unknown tool ${name}`);
        }
        return session.call(name, request.params.arguments ?? {}, extra.signal, String(extra.requestId));
      });
      server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
        resourceTemplates: [RESOURCE_TEMPLATE],
      }));
      server.setRequestHandler(ListResourcesRequestSchema, async () => ({
        resources: await listFileResources(session),
      }));
      server.setRequestHandler(ReadResourceRequestSchema, async (request) =>
        readFileResource(session, request.params.uri),
      );
      server.onclose = () => {
        // The session stays in the set until its sandbox is gone, so close() waits for it.
        void session.end("the transport closed").finally(() => sessions.delete(session));
      };
      await server.connect(transport);
      // The client's capabilities are known only after initialize: checked when a rule asks.
      session.useElicitation(async (request) => {
        if (!server.getClientCapabilities()?.elicitation) return false;
        const answer = await server.elicitInput(
          {
            mode: "form",
            message: `Allow ${request.tool}? ${request.reason}.\nInput: ${JSON.stringify(request.input).slice(0, 2000)}`,
            requestedSchema: {
              type: "object",
              properties: {
                approve: { type: "boolean", title: `Allow ${request.tool}`, description: request.reason },
              },
              required: ["approve"],
            },
          },
          { timeout: 5 * 60_000 },
        );
        return answer.action === "accept" && answer.content?.approve === true;
      });
      options.onEvent?.({ type: "session-started", session: session.id });
      return session;
    },
    async close() {
      await Promise.all([...sessions].map((session) => session.end("the server closed")));
      sessions.clear();
      if (ownClient) await client.dispose();
    },
  };
}
