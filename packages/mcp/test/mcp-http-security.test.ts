/**
 * Streamable HTTP's guards (refused at start without a token on a non-loopback bind, bearer token, no
 * CORS, Host check against DNS rebinding), the session limits (concurrent-call cap) and the session
 * tools of --multi and kept sandboxes recorded by @sbox/manager, with the SDK's real Client.
 */
import { request } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createSandboxClient, SandboxError } from "@sbox/core";
import { memoryStore, SandboxManager } from "@sbox/manager";
import { local } from "@sbox/provider-local";
import { afterAll, describe, expect, it } from "vitest";
import { createSandboxMcpServer, serveStreamableHttp } from "../src/index.js";
import { eventually, SANDBOX_PATH, tempDir } from "./helpers.js";

const temp = tempDir("http");
afterAll(() => temp.cleanup());
const provider = () => local({ root: `${temp.dir}/local`, isolation: "bwrap", path: SANDBOX_PATH });
const TOKEN = "t0ken-for-tests-only-0123456789";

async function existing(): Promise<string[]> {
  const client = createSandboxClient({ provider: provider() });
  const ids: string[] = [];
  for await (const info of client.list()) ids.push(info.id);
  await client.dispose();
  return ids;
}

function initialize(url: string, headers: Record<string, string>) {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    }),
  });
}

/** The status of a request with a forged Host header (fetch cannot set one). */
function statusWithHost(url: string, host: string): Promise<number> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: "POST",
        headers: { host, "content-type": "application/json" },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on("error", reject);
    req.end("{}");
  });
}

describe("streamable HTTP guards", () => {
  it("refuses to start on a non-loopback address without a bearer token", async () => {
    const server = createSandboxMcpServer({ provider: provider() });
    for (const host of ["0.0.0.0", "::", "192.0.2.10"]) {
      const error = await serveStreamableHttp(server, { host }).catch((e: unknown) => e);
      expect(SandboxError.isInstance(error)).toBe(true);
      expect((error as SandboxError).code).toBe("Validation");
      expect((error as SandboxError).message).toContain("without a bearer token");
    }
    await expect(serveStreamableHttp(server, { token: "short" })).rejects.toThrow(/at least 16 characters/);
    await server.close();
  });

  it("a token-protected endpoint refuses requests without it; CORS stays off; a foreign Host is refused", async () => {
    const server = createSandboxMcpServer({ provider: provider() });
    const http = await serveStreamableHttp(server, { token: TOKEN });
    try {
      const anonymous = await initialize(http.url, {});
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get("www-authenticate")).toContain("Bearer");
      const wrong = await initialize(http.url, { authorization: `Bearer ${TOKEN.slice(0, -1)}x` });
      expect(wrong.status).toBe(401);
      const fromBrowser = await initialize(http.url, {
        authorization: `Bearer ${TOKEN}`,
        origin: "http://evil.test",
      });
      expect(fromBrowser.status).toBe(403);
      expect(fromBrowser.headers.get("access-control-allow-origin")).toBeNull();
      const preflight = await fetch(http.url, { method: "OPTIONS", headers: { origin: "http://evil.test" } });
      expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
      expect(await statusWithHost(http.url, "evil.test")).toBe(403);
      expect(await statusWithHost(http.url, new URL(http.url).host)).toBe(401);
      const client = new Client({ name: "with-token", version: "1" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(http.url), {
          requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
        }),
      );
      expect((await client.listTools()).tools.length).toBeGreaterThan(5);
      await client.close();
    } finally {
      await http.close();
      await server.close();
    }
  });

  it("caps concurrent calls per session with a readable error", async () => {
    const server = createSandboxMcpServer({ provider: provider(), maxConcurrentCalls: 1 });
    const http = await serveStreamableHttp(server);
    const client = new Client({ name: "busy", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
    try {
      await client.callTool({ name: "run_command", arguments: { command: "true" } });
      const slow = client.callTool({ name: "run_command", arguments: { command: "sleep 2" } });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const refused = (await client.callTool({
        name: "run_command",
        arguments: { command: "echo second" },
      })) as {
        isError?: boolean;
        structuredContent?: unknown;
      };
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent).toMatchObject({ error: { code: "QuotaExceeded" } });
      expect(((await slow) as { isError?: boolean }).isError).toBeFalsy();
    } finally {
      await client.close();
      await http.close();
      await server.close();
    }
  });
});

describe("sessions", () => {
  it("--multi sessions create, select and destroy sandboxes; all go with the session", async () => {
    const before = await existing();
    const server = createSandboxMcpServer({ provider: provider(), multi: true });
    const http = await serveStreamableHttp(server);
    const client = new Client({ name: "multi", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
    type Result = {
      structuredContent?: { data?: { id?: string; sandboxes?: string[] } };
      content: { text: string }[];
    };
    try {
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toEqual(
        expect.arrayContaining(["create_sandbox", "list_sandboxes", "select_sandbox", "destroy_sandbox"]),
      );
      await client.callTool({ name: "write_file", arguments: { path: "which.txt", content: "first" } });
      const second = (await client.callTool({ name: "create_sandbox", arguments: {} })) as Result;
      const secondId = second.structuredContent!.data!.id!;
      await client.callTool({ name: "write_file", arguments: { path: "which.txt", content: "second" } });
      const listed = (await client.callTool({ name: "list_sandboxes", arguments: {} })) as Result;
      const ids = listed.structuredContent!.data!.sandboxes!;
      expect(ids).toHaveLength(2);
      const firstId = ids.find((id) => id !== secondId)!;
      await client.callTool({ name: "select_sandbox", arguments: { id: firstId } });
      const read = (await client.callTool({ name: "read_file", arguments: { path: "which.txt" } })) as Result;
      expect(read.content[0]!.text).toBe("first");
      await client.callTool({ name: "destroy_sandbox", arguments: { id: secondId } });
      expect(await existing()).toHaveLength(before.length + 1);
    } finally {
      await client.close();
      await http.close();
      await server.close();
    }
    expect(await eventually(async () => (await existing()).length === before.length)).toBe(true);
  });

  it("kept sandboxes outlive the session and are recorded by the manager", async () => {
    const store = memoryStore();
    const manager = new SandboxManager({ providers: { local: provider() }, store });
    const server = createSandboxMcpServer({ provider: provider(), keep: { manager, provider: "local" } });
    const http = await serveStreamableHttp(server);
    const client = new Client({ name: "keeper", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
    await client.callTool({ name: "write_file", arguments: { path: "kept.txt", content: "still here" } });
    await client.close();
    await http.close();
    await server.close();
    const records = await manager.list();
    expect(records).toHaveLength(1);
    const record = records[0]!;
    expect(record.labels["sbox.mcp-session"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(await manager.readFile(record.id, "kept.txt", { encoding: "utf8" })).toBe("still here");
    await manager.destroy(record.id);
    await manager.close();
  });
});

describe("ask rules over MCP", () => {
  it("asks the user through MCP elicitation when the client supports it, and denies when it does not", async () => {
    const { ElicitRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");
    const server = createSandboxMcpServer({
      provider: provider(),
      policy: { commands: { ask: ["echo sensitive"] } },
    });
    const http = await serveStreamableHttp(server);
    type Result = { isError?: boolean; content: { text: string }[] };
    try {
      const asked: string[] = [];
      const human = new Client({ name: "with-a-human", version: "1" }, { capabilities: { elicitation: {} } });
      human.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(String(request.params.message));
        return { action: "accept", content: { approve: asked.length === 1 } };
      });
      await human.connect(new StreamableHTTPClientTransport(new URL(http.url)));
      const yes = (await human.callTool({
        name: "run_command",
        arguments: { command: "echo sensitive yes" },
      })) as Result;
      expect(yes.isError).toBeFalsy();
      expect(yes.content[0]!.text).toContain("sensitive yes");
      const no = (await human.callTool({
        name: "run_command",
        arguments: { command: "echo sensitive no" },
      })) as Result;
      expect(no.isError).toBe(true);
      expect(no.content[0]!.text).toContain("not approved");
      expect(asked[0]).toContain("Allow run_command?");
      await human.close();
      const robot = new Client({ name: "no-elicitation", version: "1" });
      await robot.connect(new StreamableHTTPClientTransport(new URL(http.url)));
      const refused = (await robot.callTool({
        name: "run_command",
        arguments: { command: "echo sensitive" },
      })) as Result;
      expect(refused.isError).toBe(true);
      expect(refused.content[0]!.text).toContain("PolicyDenied");
      await robot.close();
    } finally {
      await http.close();
      await server.close();
    }
  });
});
