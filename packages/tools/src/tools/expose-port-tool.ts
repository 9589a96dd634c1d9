import { SandboxError } from "@sbox/core";
import { z } from "zod";
import type { ToolDefinition } from "./tool-definition.js";
import type { ExposePortInput } from "./tool-inputs.js";

/** `expose_port`: a URL that reaches a port a server in the sandbox listens on. */
export const exposePortTool: ToolDefinition<"expose_port"> = {
  name: "expose_port",
  description: () =>
    "Expose a TCP port a server in the sandbox listens on and get a URL that reaches it (start the server first, e.g. with run_command and background: true).",
  schema: () =>
    z.strictObject({
      port: z.number().int().min(1).max(65_535).describe("The port inside the sandbox."),
      private: z
        .boolean()
        .optional()
        .describe("Require a token to reach the URL, where the provider supports it."),
    }) as z.ZodType<ExposePortInput>,
  async run(input, context) {
    const { sandbox } = context;
    if (!sandbox.can("exposePort")) throw new SandboxError("NotSupported", "ports are not supported here");
    const info = await sandbox.ports.expose(
      input.port,
      input.private === undefined ? {} : { private: input.private },
    );
    // A private preview's token is a credential: the model gets the URL, never the token.
    return {
      text: `Port ${info.port} is reachable at ${info.url}${info.token ? " (a token is required; it was given to the application, not shown here)" : ""}.`,
      data: { port: info.port, url: info.url, private: info.token !== undefined },
    };
  },
};
