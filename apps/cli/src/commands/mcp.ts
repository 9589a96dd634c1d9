import { readFile } from "node:fs/promises";
import type { Readable, Writable } from "node:stream";
import { SandboxError } from "@sbox/core";
import { booleanOption, stringOption } from "../args/parse-command-line.js";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { usageError } from "../args/usage-error.js";
import { parseDuration, parseInteger } from "../args/value-parsers.js";
import { managerFor } from "../records/record-operations.js";
import { trapInterrupts } from "../signals.js";
import type { CommandDefinition } from "./command-definition.js";

/** Reads and validates the policy file (JSON, the @sbox/tools `ToolPolicy` shape). */
async function loadPolicy(path: string | undefined, cwd: string): Promise<unknown> {
  if (path === undefined) return undefined;
  const file = path.startsWith("/") ? path : `${cwd}/${path}`;
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new SandboxError(
      "Validation",
      `--policy: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? "error"})`,
    );
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new SandboxError("Validation", `--policy: ${path} is not valid JSON (${(error as Error).message})`);
  }
}

/** `sbox mcp`: an MCP server over stdio (default) or streamable HTTP, one sandbox per session. */
export const mcpCommand: CommandDefinition = {
  name: "mcp",
  summary: "serve sandboxes to MCP clients (Claude, Cursor, VS Code, agents) over stdio or HTTP",
  usage: [
    "sbox mcp [--provider P] [--template T] [--policy FILE] [--multi] [--keep]",
    "sbox mcp --http [--port N] [--host H] [...]",
  ],
  details:
    "Each MCP session gets its own sandbox, created on its first tool call and destroyed when the session\n" +
    "ends (with --keep it is kept and recorded, see `sbox ls`). Tools are the @sbox/tools set the provider\n" +
    "supports, held to --policy (a JSON ToolPolicy: commands, paths, limits; destructive tools are off unless\n" +
    "it enables them). Over stdio (the default) stdout carries only MCP; events go to stderr. --http serves\n" +
    "streamable HTTP on 127.0.0.1; any other --host needs a bearer token from $SBOX_MCP_TOKEN or\n" +
    "--token-file (never on the command line, where other users could read it).",
  options: {
    template: {
      type: "string",
      short: "t",
      valueName: "REF",
      description: "image / template of each session's sandbox",
    },
    policy: { type: "string", valueName: "FILE", description: "tool policy (JSON) every call is held to" },
    multi: { type: "boolean", description: "add tools to create, list, select and destroy more sandboxes" },
    keep: {
      type: "boolean",
      description: "keep sandboxes when their session ends (recorded by @sbox/manager)",
    },
    http: { type: "boolean", description: "serve streamable HTTP instead of stdio" },
    host: {
      type: "string",
      valueName: "ADDRESS",
      description: "address to bind with --http (default 127.0.0.1)",
    },
    port: {
      type: "string",
      valueName: "N",
      description: "port with --http (default 7340; 0 picks a free one)",
    },
    "token-file": {
      type: "string",
      valueName: "FILE",
      description: "file holding the bearer token for --http",
    },
    "max-calls": {
      type: "string",
      valueName: "N",
      description: "tool calls one session may run at once (default 4)",
    },
    idle: {
      type: "string",
      valueName: "DURATION",
      description: "end an HTTP session idle this long (default 15m)",
    },
  },
  examples: [
    "sbox mcp",
    "sbox mcp -p docker -t python:3.12-slim --policy policy.json",
    "SBOX_MCP_TOKEN=$(openssl rand -hex 24) sbox mcp --http --host 0.0.0.0 --port 7340",
  ],
  async run(context, args) {
    expectPositionals(args, "mcp", [], { max: 0 });
    expectNoCommand(args, "mcp");
    const http = booleanOption(args.values, "http");
    for (const name of ["host", "port", "token-file", "idle"]) {
      if (!http && stringOption(args.values, name) !== undefined) throw usageError(`--${name} needs --http`);
    }
    const { createSandboxMcpServer, serveStdio, serveStreamableHttp } = await import("@sbox/mcp");
    const { parseToolPolicy } = await import("@sbox/tools");
    const policy = parseToolPolicy(
      (await loadPolicy(stringOption(args.values, "policy"), context.io.cwd)) ?? {},
    );
    const template = stringOption(args.values, "template");
    const maxCalls = stringOption(args.values, "max-calls");
    const client = await context.client();
    let manager: Awaited<ReturnType<typeof managerFor>>;
    if (booleanOption(args.values, "keep")) {
      manager = await managerFor(context, [context.providerName]);
      if (!manager)
        throw new SandboxError(
          "Validation",
          "--keep needs sandbox records (@sbox/manager, SBOX_RECORDS not 0)",
        );
    }
    const log = (text: string) => context.io.stderr.write(`${context.err.dim(`sbox mcp: ${text}`)}\n`);
    const server = createSandboxMcpServer({
      client,
      policy,
      ...(template === undefined ? {} : { spec: { template } }),
      multi: booleanOption(args.values, "multi"),
      ...(manager ? { keep: { manager, provider: context.providerName } } : {}),
      ...(maxCalls === undefined ? {} : { maxConcurrentCalls: parseInteger(maxCalls, "--max-calls", 1, 64) }),
      onEvent: (event) => {
        if (event.type === "sandbox-created")
          log(`session ${event.session.slice(0, 8)}: created ${event.sandboxId}`);
        else if (event.type === "sandbox-destroyed")
          log(`session ${event.session.slice(0, 8)}: destroyed ${event.sandboxId}`);
        else if (event.type === "sandbox-kept")
          log(`session ${event.session.slice(0, 8)}: kept ${event.sandboxId} (record ${event.recordId})`);
        else if (event.type === "error")
          log(`session ${event.session.slice(0, 8)}: ${event.code}: ${event.message}`);
      },
    });
    let stop: () => Promise<void>;
    let finished: Promise<void>;
    if (http) {
      const tokenFile = stringOption(args.values, "token-file");
      const token =
        tokenFile === undefined ? context.io.env.SBOX_MCP_TOKEN : (await readFile(tokenFile, "utf8")).trim();
      const portText = stringOption(args.values, "port");
      const idle = stringOption(args.values, "idle");
      const serving = await serveStreamableHttp(server, {
        host: stringOption(args.values, "host"),
        port: portText === undefined ? 7340 : parseInteger(portText, "--port", 0, 65535),
        token: token === "" ? undefined : token,
        ...(idle === undefined ? {} : { sessionIdleMs: parseDuration(idle, "--idle") }),
      });
      log(
        `streamable HTTP on ${serving.url}${token ? " (bearer token required)" : ""}; provider ${client.provider}`,
      );
      let release!: () => void;
      finished = new Promise<void>((resolve) => {
        release = resolve;
      });
      stop = async () => {
        await serving.close();
        release();
      };
    } else {
      const serving = await serveStdio(server, {
        stdin: context.io.stdin as unknown as Readable,
        stdout: context.io.stdout as unknown as Writable,
      });
      log(`serving MCP on stdio; provider ${client.provider}`);
      finished = serving.ended;
      stop = () => serving.close();
    }
    // A signal ends the sessions (their sandboxes destroyed or kept) before the process goes.
    const untrap = trapInterrupts(() => void stop());
    try {
      await finished;
    } finally {
      untrap();
      await server.close();
    }
    return 0;
  },
};
