import { CAPABILITY_NAMES } from "@sbox/core";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { formatLabels, formatRelative } from "../output/format.js";
import { recordToJson } from "../records/record-json.js";
import { recordOfSandbox } from "../records/record-operations.js";
import type { CommandDefinition } from "./command-definition.js";
import { styleState } from "./ls.js";
import { infoToJson } from "./sandbox-json.js";

function scalarDetails(raw: unknown): [string, string][] {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return [];
  const rows: [string, string][] = [];
  for (const [key, value] of Object.entries(raw)) {
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean")
      rows.push([key, String(value)]);
  }
  return rows.slice(0, 20);
}

/** `sbox info ID`: the live state and details of one sandbox. */
export const infoCommand: CommandDefinition = {
  name: "info",
  summary: "show a sandbox's live state, labels, expiry and capabilities",
  usage: ["sbox info [--json] ID"],
  options: {},
  examples: ["sbox info local:3f2a", "sbox info --json docker:91bc | jq .state"],
  async run(context, args) {
    const [id] = expectPositionals(args, "info", ["ID"]);
    expectNoCommand(args, "info");
    const sandbox = await context.connect(id!);
    const info = await context.waitFor("reading state", () => sandbox.getInfo());
    const record = await recordOfSandbox(context, id!);
    const capabilities = Object.fromEntries(
      CAPABILITY_NAMES.map((name) => [name, sandbox.capabilities.map[name]]),
    );
    if (context.json) {
      context.printJson({
        ...infoToJson(info),
        capabilities,
        flags: sandbox.capabilities.flags,
        ...(record ? { record: recordToJson(record) } : {}),
      });
      return 0;
    }
    const { out } = context;
    const available = CAPABILITY_NAMES.filter((name) => sandbox.capabilities.map[name] !== "unsupported");
    const rows: [string, string][] = [
      ["id", info.id],
      ["provider", info.provider],
      ["state", styleState(info.state, out)],
      [
        "created",
        info.createdAt ? `${info.createdAt.toISOString()} (${formatRelative(info.createdAt)})` : "-",
      ],
      [
        "expires",
        info.expiresAt ? `${info.expiresAt.toISOString()} (${formatRelative(info.expiresAt)})` : "never",
      ],
      ["labels", formatLabels(info.metadata)],
      ["capabilities", available.join(", ") || "-"],
      ...(record
        ? ([
            ["record", `${record.id} (${record.status})`],
            ["owner", record.ownerId ?? "-"],
            [
              "record expires",
              record.expiresAt
                ? `${record.expiresAt.toISOString()} (${formatRelative(record.expiresAt)})`
                : "never",
            ],
          ] as [string, string][])
        : []),
      ...scalarDetails(info.raw).map(([key, value]): [string, string] => [`raw.${key}`, value]),
    ];
    const width = Math.max(...rows.map(([key]) => key.length));
    context.print(rows.map(([key, value]) => `${out.dim(key.padEnd(width))}  ${value}`).join("\n") + "\n");
    return 0;
  },
};
