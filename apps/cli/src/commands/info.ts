import { CAPABILITY_NAMES } from "@sbox/core";
import { booleanOption } from "../args/parse-command-line.js";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { formatLabels, formatRelative } from "../output/format.js";
import { recordToJson } from "../records/record-json.js";
import { recordOfSandbox } from "../records/record-operations.js";
import { NAME_OPTION, sandboxTarget } from "../records/sandbox-names.js";
import type { CommandDefinition } from "./command-definition.js";
import { styleState } from "./ls.js";
import { ALL_LABELS_OPTION, effectiveExpiry, infoToJson, nameOf, visibleLabels } from "./sandbox-json.js";

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
  usage: ["sbox info [--json] [--all-labels] ID", "sbox info [--json] --name NAME"],
  options: { name: NAME_OPTION, "all-labels": ALL_LABELS_OPTION },
  examples: ["sbox info local:3f2a", "sbox info --json docker:91bc | jq .state"],
  async run(context, args) {
    const target = await sandboxTarget(context, args);
    const [id] = expectPositionals(
      { ...args, positionals: target.id === undefined ? [] : [target.id, ...target.rest] },
      "info",
      ["ID"],
    );
    expectNoCommand(args, "info");
    const sandbox = await context.connect(id!);
    const info = await context.waitFor("reading state", () => sandbox.getInfo());
    const record = await recordOfSandbox(context, id!);
    const allLabels = booleanOption(args.values, "all-labels");
    const capabilities = Object.fromEntries(
      CAPABILITY_NAMES.map((name) => [name, sandbox.capabilities.map[name]]),
    );
    if (context.json) {
      context.printJson({
        ...infoToJson(info, { record, allLabels }),
        capabilities,
        flags: sandbox.capabilities.flags,
        ...(record ? { record: recordToJson(record) } : {}),
      });
      return 0;
    }
    const { out } = context;
    const available = CAPABILITY_NAMES.filter((name) => sandbox.capabilities.map[name] !== "unsupported");
    const expiresAt = effectiveExpiry(info, record);
    const name = nameOf(info);
    const rows: [string, string][] = [
      ["id", info.id],
      ...(name === undefined ? [] : ([["name", name]] as [string, string][])),
      ["provider", info.provider],
      ["state", styleState(info.state, out)],
      [
        "created",
        info.createdAt ? `${info.createdAt.toISOString()} (${formatRelative(info.createdAt)})` : "-",
      ],
      ["expires", expiresAt ? `${expiresAt.toISOString()} (${formatRelative(expiresAt)})` : "never"],
      ["labels", formatLabels(visibleLabels(info.metadata, allLabels))],
      ["capabilities", available.join(", ") || "-"],
      ...(record
        ? ([
            ["record", `${record.id} (${record.status})`],
            ["owner", record.ownerId ?? "-"],
          ] as [string, string][])
        : []),
      ...scalarDetails(info.raw).map(([key, value]): [string, string] => [`raw.${key}`, value]),
    ];
    const width = Math.max(...rows.map(([key]) => key.length));
    context.print(rows.map(([key, value]) => `${out.dim(key.padEnd(width))}  ${value}`).join("\n") + "\n");
    return 0;
  },
};
