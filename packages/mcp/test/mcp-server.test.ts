/**
 * The MCP SDK's real Client against the server over stdio (the server a subprocess, as desktop clients
 * start it) and streamable HTTP, on provider-local and Docker: tools listed by capability, commands, files,
 * resources, a denied call, a timeout, the sandbox destroyed when the session closes, and nothing left
 * running when the client is killed mid-call.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { createSandboxClient, type SandboxProvider } from "@sbox/core";
import { local } from "@sbox/provider-local";
import { describeSandboxTools, type ToolPolicy } from "@sbox/tools";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandboxMcpServer, type HttpServing, serveStreamableHttp } from "../src/index.js";
import {
  DOCKER_IMAGE,
  DOCKER_MISSING,
  dockerProvider,
  leftoverContainers,
  RUN_ID,
  RUN_LABEL,
} from "./docker-env.js";
import {
  alive,
  bundleFixture,
  eventually,
  processesWithMarker,
  SANDBOX_PATH,
  startNode,
  tempDir,
} from "./helpers.js";

const temp = tempDir("server");
let serverBundle: string;
let clientBundle: string;
beforeAll(async () => {
  serverBundle = await bundleFixture("mcp-server-fixture");
  clientBundle = await bundleFixture("mcp-client-fixture");
});
afterAll(() => {
  temp.cleanup();
  if (!DOCKER_MISSING) expect(leftoverContainers()).toEqual([]);
});

const POLICY: ToolPolicy = { commands: { deny: ["curl"] }, limits: { timeoutMs: 1500 } };

interface Backend {
  readonly label: string;
  readonly skip: string | undefined;
  /** The provider, for the in-process server and for checking what exists. */
  provider(): SandboxProvider;
  /** argv of the stdio fixture. */
  fixtureArgs(): string[];
}

const localRoot = `${temp.dir}/local`;
const BACKENDS: Backend[] = [
  {
    label: "provider-local",
    skip: undefined,
    provider: () => local({ root: localRoot, isolation: "bwrap", path: SANDBOX_PATH }),
    fixtureArgs: () => ["local", JSON.stringify({ root: localRoot, policy: POLICY })],
  },
  {
    label: "docker",
    skip: DOCKER_MISSING,
    provider: dockerProvider,
    fixtureArgs: () => [
      "docker",
      JSON.stringify({ image: DOCKER_IMAGE, label: { [RUN_LABEL]: RUN_ID }, policy: POLICY }),
    ],
  },
];

/** Ids of the sandboxes that exist on the provider now. */
async function existing(provider: SandboxProvider): Promise<string[]> {
  const client = createSandboxClient({ provider });
  const ids: string[] = [];
  for await (const info of client.list()) ids.push(info.id);
  await client.dispose();
  return ids;
}

type ToolCallResult = {
  content: { type: string; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolCallResult> {
  return (await client.callTool({ name, arguments: args })) as ToolCallResult;
}

for (const backend of BACKENDS) {
  const transports: { name: string; open(): Promise<{ transport: Transport; close(): Promise<void> }> }[] = [
    {
      name: "stdio",
      async open() {
        const transport = new StdioClientTransport({
          command: process.execPath,
          args: [serverBundle, ...backend.fixtureArgs()],
          stderr: "ignore",
        });
        return { transport, close: async () => undefined };
      },
    },
    {
      name: "streamable HTTP",
      async open() {
        const server = createSandboxMcpServer({ provider: backend.provider(), policy: POLICY });
        const http: HttpServing = await serveStreamableHttp(server);
        expect(http.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
        return {
          transport: new StreamableHTTPClientTransport(new URL(http.url)),
          close: async () => {
            await http.close();
            await server.close();
          },
        };
      },
    },
  ];
  for (const kind of transports) {
    describe.skipIf(backend.skip !== undefined)(
      `MCP over ${kind.name} on ${backend.label}${backend.skip ? ` (SKIPPED: ${backend.skip})` : ""}`,
      () => {
        it("lists the provider's tools, runs commands, moves files, refuses and times out; closing destroys the sandbox", async () => {
          const provider = backend.provider();
          const before = await existing(provider);
          const { transport, close } = await kind.open();
          const client = new Client({ name: "test-client", version: "1.0.0" });
          await client.connect(transport);
          try {
            const { tools } = await client.listTools();
            const names = tools.map((tool) => tool.name).sort();
            const capabilities = createSandboxClient({ provider }).capabilities;
            expect(names).toEqual(
              describeSandboxTools(capabilities, { policy: POLICY })
                .map((t) => t.name)
                .sort(),
            );
            expect(names).not.toContain("run_code");
            expect(names).not.toContain("remove_file");
            expect(names.includes("expose_port")).toBe(capabilities.map.exposePort !== "unsupported");
            const read = tools.find((tool) => tool.name === "read_file")!;
            expect(read.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
            expect(read.inputSchema).toMatchObject({ type: "object", required: ["path"] });
            // Listing creates nothing: the sandbox comes with the first call.
            expect(await client.listResources()).toEqual({ resources: [] });
            expect(await existing(provider)).toEqual(before);

            const ran = await call(client, "run_command", {
              command: "echo hello from $(hostname) >&2; echo it\\'s fine",
            });
            expect(ran.isError).toBeFalsy();
            expect(ran.content[0]!.text).toMatch(/^exit code 0/);
            expect(ran.content[0]!.text).toContain("it's fine");
            expect(ran.structuredContent).toMatchObject({
              ok: true,
              tool: "run_command",
              data: { exitCode: 0 },
            });
            const created = (await existing(provider)).filter((id) => !before.includes(id));
            expect(created).toHaveLength(1);

            const wrote = await call(client, "write_file", {
              path: "notes/a.txt",
              content: "line one\nline two\n",
            });
            // The text says why when it failed.
            expect(wrote.isError ? wrote.content[0]!.text : "").toBe("");
            const back = await call(client, "read_file", { path: "notes/a.txt" });
            expect(back.content[0]!.text).toBe("line one\nline two\n");
            const resources = await client.listResources();
            expect(resources.resources.map((r) => r.uri)).toContain("sandbox://files/notes/a.txt");
            const resource = await client.readResource({ uri: "sandbox://files/notes/a.txt" });
            expect(resource.contents[0]).toMatchObject({ text: "line one\nline two\n" });
            await expect(
              client.readResource({ uri: "sandbox://files/..%2F..%2Fetc%2Fpasswd" }),
            ).rejects.toThrow(/outside the allowed directory/);

            const denied = await call(client, "run_command", { command: "curl -s http://127.0.0.1:9/" });
            expect(denied.isError).toBe(true);
            expect(denied.structuredContent).toMatchObject({ ok: false, error: { code: "PolicyDenied" } });
            expect(denied.content[0]!.text).toContain('matches the denied command "curl"');

            const started = Date.now();
            const slow = await call(client, "run_command", { command: "echo begun; sleep 30" });
            expect(Date.now() - started).toBeLessThan(15_000);
            expect(slow.isError).toBe(true);
            expect(slow.structuredContent).toMatchObject({ error: { code: "Timeout" } });
            expect(slow.content[0]!.text).toContain("begun");

            const bad = await call(client, "read_file", { nope: 1 });
            expect(bad).toMatchObject({
              isError: true,
              structuredContent: { error: { code: "Validation" } },
            });
            await expect(client.callTool({ name: "no_such_tool", arguments: {} })).rejects.toThrow(
              /unknown tool/,
            );
          } finally {
            await client.close();
            await close();
          }
          expect(await eventually(async () => (await existing(provider)).length === before.length)).toBe(
            true,
          );
          expect(await existing(provider)).toEqual(before);
        });

        it("killing the client mid-call leaves nothing running", async () => {
          const provider = backend.provider();
          const before = await existing(provider);
          const marker = `${5000 + Math.floor(Math.random() * 4000)}.${Math.floor(Math.random() * 9000) + 1000}`;
          let http: HttpServing | undefined;
          let server: ReturnType<typeof createSandboxMcpServer> | undefined;
          let args: string[];
          if (kind.name === "stdio") args = ["stdio", serverBundle, ...backend.fixtureArgs()];
          else {
            server = createSandboxMcpServer({
              provider: backend.provider(),
              policy: { limits: { maxTimeoutMs: 600_000 } },
            });
            http = await serveStreamableHttp(server, { sessionIdleMs: 1500 });
            args = ["http", http.url];
          }
          const doomed = await startNode(clientBundle, args, { SBOX_TEST_MARKER: marker });
          const serverPid = doomed.line.serverPid as number | undefined;
          try {
            // The command runs (inside the sandbox) when the client dies.
            expect(await eventually(async () => (await existing(provider)).length > before.length)).toBe(
              true,
            );
            if (backend.label === "provider-local") {
              expect(
                await eventually(async () => (await processesWithMarker(`sleep\0${marker}`)).length >= 2),
              ).toBe(true);
            }
            doomed.kill("SIGKILL");
            expect(
              await eventually(async () => (await existing(provider)).length === before.length, 30_000),
            ).toBe(true);
            if (backend.label === "provider-local") {
              expect(
                await eventually(async () => (await processesWithMarker(`sleep\0${marker}`)).length === 0),
              ).toBe(true);
            }
            if (serverPid !== undefined) expect(await eventually(() => !alive(serverPid))).toBe(true);
          } finally {
            doomed.kill("SIGKILL");
            if (serverPid !== undefined && alive(serverPid)) process.kill(serverPid, "SIGKILL");
            await http?.close();
            await server?.close();
          }
        });
      },
    );
  }
}
