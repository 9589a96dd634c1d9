/**
 * `sbox mcp` started as a subprocess by the MCP SDK's stdio client, exactly as a desktop client starts it
 * (command + args + env), and `sbox mcp --http` refusing an unsafe bind.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, describe, expect, it } from "vitest";
import { idsOf, makeSboxHome, SBOX_BIN, waitUntil } from "./sbox-harness.js";

const home = makeSboxHome({ SBOX_RECORDS: "0" });
afterAll(() => home.cleanup());

type Result = {
  content: { type: string; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};

describe("sbox mcp", () => {
  it("serves a stdio client; the session's sandbox goes with the session", async () => {
    const policy = join(home.dir, "policy.json");
    writeFileSync(policy, JSON.stringify({ commands: { deny: ["curl"] } }));
    let stderr = "";
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [SBOX_BIN, "mcp", "--provider", "local", "--policy", policy],
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...home.env },
      stderr: "pipe",
    });
    transport.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const client = new Client({ name: "desktop-like", version: "1.0.0" });
    await client.connect(transport);
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(
      expect.arrayContaining(["run_command", "read_file", "write_file", "edit_file", "expose_port"]),
    );
    expect(names).not.toContain("remove_file");
    const ran = (await client.callTool({
      name: "run_command",
      arguments: { command: "echo from-mcp" },
    })) as Result;
    expect(ran.content[0]!.text).toContain("from-mcp");
    const [id] = idsOf(await home.run(["ls", "--json"]));
    expect(id).toMatch(/^local:/);
    await client.callTool({ name: "write_file", arguments: { path: "x.txt", content: "via mcp" } });
    expect((await home.run(["exec", id!, "--", "cat", "x.txt"])).stdout).toBe("via mcp");
    const denied = (await client.callTool({
      name: "run_command",
      arguments: { command: "curl x" },
    })) as Result;
    expect(denied).toMatchObject({ isError: true, structuredContent: { error: { code: "PolicyDenied" } } });
    await client.close();
    await waitUntil(
      async () => idsOf(await home.run(["ls", "--json"])).length === 0,
      20_000,
      "the sandbox to be destroyed",
    );
    expect(stderr).toContain(`created ${id}`);
    expect(stderr).toContain(`destroyed ${id}`);
  });

  it("SIGTERM to sbox mcp ends the session: its sandbox is destroyed before the process exits", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [SBOX_BIN, "mcp", "--provider", "local"],
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...home.env },
      stderr: "pipe",
    });
    const client = new Client({ name: "desktop-like", version: "1.0.0" });
    await client.connect(transport);
    await client.callTool({ name: "run_command", arguments: { command: "true" } });
    expect(idsOf(await home.run(["ls", "--json"]))).toHaveLength(1);
    const pid = transport.pid!;
    const exited = new Promise<void>((resolve) => {
      transport.onclose = () => resolve();
    });
    process.kill(pid, "SIGTERM");
    await exited;
    await waitUntil(
      () => {
        try {
          process.kill(pid, 0);
          return false;
        } catch {
          return true;
        }
      },
      20_000,
      "sbox mcp to exit",
    );
    expect(idsOf(await home.run(["ls", "--json"]))).toEqual([]);
    await client.close().catch(() => undefined);
  });

  it("refuses --http on a non-loopback address without a token, and a bad policy file, with clear errors", async () => {
    const open = await home.run(["mcp", "--http", "--host", "0.0.0.0", "--port", "0"], {
      env: { SBOX_MCP_TOKEN: "" },
    });
    expect(open.code).not.toBe(0);
    expect(open.stderr).toContain("without a bearer token");
    const badPolicy = join(home.dir, "bad.json");
    writeFileSync(badPolicy, JSON.stringify({ commands: { deny: "rm" }, tools: { no_such_tool: "allow" } }));
    const bad = await home.run(["mcp", "--policy", badPolicy]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("invalid tool policy");
    const stray = await home.run(["mcp", "--port", "9"]);
    expect(stray.code).not.toBe(0);
    expect(stray.stderr).toContain("--port needs --http");
  });
});
