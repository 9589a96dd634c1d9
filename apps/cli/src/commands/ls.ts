import type { ListFilter, SandboxInfo, SandboxState } from "@sbox/core";
import { type OptionValues, stringListOption, stringOption } from "../args/parse-command-line.js";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { usageError } from "../args/usage-error.js";
import { parseInteger, parseLabels } from "../args/value-parsers.js";
import type { CliContext } from "../cli-context.js";
import type { Colours } from "../output/colour.js";
import { formatLabels, formatRelative } from "../output/format.js";
import { renderTable } from "../output/table.js";
import type { CommandDefinition } from "./command-definition.js";
import { infoToJson } from "./sandbox-json.js";

const STATES: readonly SandboxState[] = [
  "starting",
  "running",
  "paused",
  "stopped",
  "destroyed",
  "error",
  "unknown",
];

/** Colours a state for a terminal. */
export function styleState(state: SandboxState, colours: Colours): string {
  if (state === "running") return colours.green(state);
  if (state === "paused" || state === "stopped") return colours.yellow(state);
  if (state === "error") return colours.red(state);
  return colours.dim(state);
}

/** The `ListFilter` given by `--label`, `--state` and `--limit`. */
export function listFilterOf(values: OptionValues): ListFilter {
  const filter: { metadata?: Record<string, string>; state?: SandboxState[]; limit?: number } = {};
  const labels = stringListOption(values, "label");
  if (labels.length > 0) filter.metadata = parseLabels(labels);
  const states = stringListOption(values, "state");
  if (states.length > 0) {
    for (const state of states) {
      if (!STATES.includes(state as SandboxState)) {
        throw usageError(`--state must be one of ${STATES.join(", ")}, got ${JSON.stringify(state)}`);
      }
    }
    filter.state = states as SandboxState[];
  }
  const limit = stringOption(values, "limit");
  if (limit !== undefined) filter.limit = parseInteger(limit, "--limit", 1, 1_000_000);
  return filter;
}

/** Collects `client.list(filter)` of the chosen provider under a spinner. */
export async function listSandboxes(context: CliContext, filter: ListFilter): Promise<SandboxInfo[]> {
  const client = await context.client();
  return context.waitFor("listing sandboxes", async () => {
    const found: SandboxInfo[] = [];
    for await (const info of client.list(filter)) found.push(info);
    return found;
  });
}

/** Prints sandboxes as a table (or JSON). */
export function printSandboxes(context: CliContext, sandboxes: readonly SandboxInfo[]): void {
  if (context.json) {
    context.printJson(sandboxes.map(infoToJson));
    return;
  }
  if (sandboxes.length === 0) {
    if (context.io.stdout.isTTY) context.note(context.err.dim("no sandboxes"));
    return;
  }
  const now = Date.now();
  context.print(
    renderTable(
      sandboxes,
      [
        { header: "ID", cell: (info) => info.id },
        { header: "STATE", cell: (info) => styleState(info.state, context.out) },
        { header: "CREATED", cell: (info) => formatRelative(info.createdAt, now) },
        { header: "EXPIRES", cell: (info) => formatRelative(info.expiresAt, now) },
        { header: "LABELS", cell: (info) => formatLabels(info.metadata) },
      ],
      context.out.bold,
    ),
  );
}

/** `sbox ls`: lists sandboxes of the provider. */
export const lsCommand: CommandDefinition = {
  name: "ls",
  summary: "list sandboxes (table, or --json)",
  usage: ["sbox ls [--label K=V]... [--state STATE]... [--limit N] [--json]"],
  details: "Every filter is honoured (by the provider or by sbox). Labels are the sandbox metadata.",
  options: {
    label: {
      type: "string",
      short: "l",
      multiple: true,
      valueName: "K=V",
      description: "only sandboxes with this label",
    },
    state: {
      type: "string",
      multiple: true,
      valueName: "STATE",
      description: `only these states (${STATES.join(", ")})`,
    },
    limit: { type: "string", valueName: "N", description: "at most N sandboxes" },
  },
  examples: ["sbox ls", "sbox ls -l owner=me --state running --json | jq -r '.[].id'"],
  async run(context, args) {
    expectPositionals(args, "ls", [], { max: 0 });
    expectNoCommand(args, "ls");
    const sandboxes = await listSandboxes(context, listFilterOf(args.values));
    printSandboxes(context, sandboxes);
    return 0;
  },
};
