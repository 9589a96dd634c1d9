import {
  type ListFilter,
  SANDBOX_STATES,
  SandboxError,
  type SandboxInfo,
  type SandboxState,
} from "@sbox/core";
import type { SandboxRecord } from "@sbox/manager";
import {
  booleanOption,
  type OptionValues,
  stringListOption,
  stringOption,
} from "../args/parse-command-line.js";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { usageError } from "../args/usage-error.js";
import { parseInteger, parseLabels } from "../args/value-parsers.js";
import type { CliContext } from "../cli-context.js";
import type { Colours } from "../output/colour.js";
import { exitCodeForError, formatErrorLine } from "../output/error-line.js";
import { formatLabels, formatRelative } from "../output/format.js";
import { renderTable } from "../output/table.js";
import { recordToJson } from "../records/record-json.js";
import type { CommandDefinition } from "./command-definition.js";
import { ALL_LABELS_OPTION, effectiveExpiry, infoToJson, nameOf, visibleLabels } from "./sandbox-json.js";

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
      if (!SANDBOX_STATES.includes(state as SandboxState)) {
        throw usageError(`--state must be one of ${SANDBOX_STATES.join(", ")}, got ${JSON.stringify(state)}`);
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

/** Records of the listed sandboxes, by sandbox id (empty when records are off). */
export async function recordsBySandbox(context: CliContext): Promise<Map<string, SandboxRecord>> {
  const records = await context.records();
  const bySandbox = new Map<string, SandboxRecord>();
  if (!records) return bySandbox;
  for (const record of await records.list()) {
    if (record.sandboxId && record.status !== "destroyed") bySandbox.set(record.sandboxId, record);
  }
  return bySandbox;
}

/** Prints sandboxes as a table (or JSON), with owner and record expiry where they are recorded. */
export function printSandboxes(
  context: CliContext,
  sandboxes: readonly SandboxInfo[],
  records: ReadonlyMap<string, SandboxRecord> = new Map(),
  allLabels = false,
): void {
  if (context.json) {
    context.printJson(
      sandboxes.map((info) => {
        const record = records.get(info.id);
        const json = infoToJson(info, { record, allLabels });
        return record ? { ...json, record: recordToJson(record) } : json;
      }),
    );
    return;
  }
  if (sandboxes.length === 0) {
    if (context.io.stdout.isTTY) context.note(context.err.dim("no sandboxes"));
    return;
  }
  const now = Date.now();
  const expiry = (info: SandboxInfo): Date | undefined => effectiveExpiry(info, records.get(info.id));
  const withOwner = sandboxes.some((info) => records.get(info.id)?.ownerId);
  const withName = sandboxes.some((info) => nameOf(info) !== undefined);
  context.print(
    renderTable(
      sandboxes,
      [
        { header: "ID", cell: (info) => info.id },
        ...(withName ? [{ header: "NAME", cell: (info: SandboxInfo) => nameOf(info) ?? "-" }] : []),
        { header: "STATE", cell: (info) => styleState(info.state, context.out) },
        { header: "CREATED", cell: (info) => formatRelative(info.createdAt, now) },
        {
          header: "EXPIRES",
          cell: (info) =>
            info.partial?.fields.includes("expiresAt") ? "?" : formatRelative(expiry(info), now),
        },
        ...(withOwner
          ? [{ header: "OWNER", cell: (info: SandboxInfo) => records.get(info.id)?.ownerId ?? "-" }]
          : []),
        { header: "LABELS", cell: (info) => formatLabels(visibleLabels(info.metadata, allLabels)) },
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
  details:
    "Every filter is honoured (by the provider or by sbox). Labels are the sandbox metadata; the ones sbox\n" +
    "keeps for itself are shown with --all-labels. When part of a sandbox could not be read (a slow engine),\n" +
    "the others are listed anyway and an error line says what is missing (exit code of that error).",
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
      description: `only these states (${SANDBOX_STATES.join(", ")})`,
    },
    limit: { type: "string", valueName: "N", description: "at most N sandboxes" },
    "all-labels": ALL_LABELS_OPTION,
  },
  examples: ["sbox ls", "sbox ls -l owner=me --state running --json | jq -r '.[].id'"],
  async run(context, args) {
    expectPositionals(args, "ls", [], { max: 0 });
    expectNoCommand(args, "ls");
    const sandboxes = await listSandboxes(context, listFilterOf(args.values));
    printSandboxes(
      context,
      sandboxes,
      await recordsBySandbox(context),
      booleanOption(args.values, "all-labels"),
    );
    // What did not answer is said, after the list of what did; the exit code is the first such failure's.
    let code = 0;
    for (const info of sandboxes) {
      if (!info.partial) continue;
      const error = new SandboxError(
        info.partial.code,
        `${info.id}: ${info.partial.fields.join(", ")} not read: ${info.partial.reason}`,
        { retryable: true },
      );
      context.io.stderr.write(formatErrorLine(error, { colours: context.err, debug: false }));
      if (code === 0) code = exitCodeForError(error);
    }
    return code;
  },
};
