import { NotSupportedError } from "@sbox/core";
import { booleanOption } from "../args/parse-command-line.js";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { parseInteger } from "../args/value-parsers.js";
import { NAME_OPTION, sandboxTarget } from "../records/sandbox-names.js";
import type { CommandDefinition } from "./command-definition.js";

/** `sbox port ID PORT`: prints a URL that reaches a port inside the sandbox. */
export const portCommand: CommandDefinition = {
  name: "port",
  summary: "expose a port of a sandbox and print its URL",
  usage: ["sbox port [--private] [--json] ID PORT", "sbox port [--private] [--json] --name NAME PORT"],
  details:
    "Needs the exposePort capability. With --private the URL requires the printed token (privatePreview).",
  options: {
    private: { type: "boolean", description: "a URL that requires a token" },
    name: NAME_OPTION,
  },
  examples: ['curl "$(sbox port local:3f2a 8080)"'],
  async run(context, args) {
    const target = await sandboxTarget(context, args);
    const [id, portText] = expectPositionals(
      { ...args, positionals: target.id === undefined ? [] : [target.id, ...target.rest] },
      "port",
      ["ID", "PORT"],
    );
    expectNoCommand(args, "port");
    const port = parseInteger(portText!, "PORT", 1, 65535);
    const sandbox = await context.connect(id!);
    if (!sandbox.ports)
      throw new NotSupportedError("exposePort", sandbox.provider, "this provider cannot expose ports");
    const ports = sandbox.ports;
    const isPrivate = booleanOption(args.values, "private");
    const info = await context.waitFor(`exposing port ${port}`, () =>
      ports.expose(port, isPrivate ? { private: true } : {}),
    );
    if (context.json) {
      context.printJson({
        port: info.port,
        url: info.url,
        ...(info.token === undefined ? {} : { token: info.token }),
      });
    } else {
      context.print(`${info.url}\n`);
      if (info.token !== undefined) context.note(`token: ${info.token}`);
    }
    return 0;
  },
};
