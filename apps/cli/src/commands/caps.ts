import type { CapabilityFlags, CapabilityLevel, CapabilityMap } from "@sbox/core";
import { CAPABILITY_NAMES } from "@sbox/core";
import { booleanOption } from "../args/parse-command-line.js";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import type { Colours } from "../output/colour.js";
import { renderTable } from "../output/table.js";
import { type DiscoveredProvider, discoverProviders } from "../providers/load-provider.js";
import type { CommandDefinition } from "./command-definition.js";

const FLAG_NAMES: readonly (keyof CapabilityFlags)[] = [
  "perCommandEnvCwd",
  "exitCodeNative",
  "preservesDiskOnStop",
  "preservesMemoryOnPause",
  "previewModel",
  "nativeExpiry",
  "snapshotFilesystemOnly",
];

interface MatrixColumn {
  name: string;
  capabilities: CapabilityMap;
  flags: CapabilityFlags | undefined;
}

function levelCell(level: CapabilityLevel | undefined, colours: Colours): string {
  if (level === "native") return colours.green("native");
  if (level === "emulated") return colours.yellow("emulated");
  if (level === "unsupported") return colours.dim("-");
  return "?";
}

function flagCell(value: unknown): string {
  if (value === undefined) return "?";
  if (typeof value === "boolean") return value ? "yes" : "no";
  return String(value);
}

/** The capability matrix as Markdown: capabilities as rows, providers as columns, then the flags. */
export function renderCapabilityMarkdown(columns: readonly MatrixColumn[]): string {
  const header = `| capability | ${columns.map((column) => column.name).join(" | ")} |`;
  const rule = `|---|${columns.map(() => "---").join("|")}|`;
  const levelText = (level: CapabilityLevel | undefined): string =>
    level === "native" ? "native" : level === "emulated" ? "emulated" : level === "unsupported" ? "—" : "?";
  const rows = CAPABILITY_NAMES.map(
    (name) => `| ${name} | ${columns.map((column) => levelText(column.capabilities[name])).join(" | ")} |`,
  );
  const flagRows = FLAG_NAMES.map(
    (flag) => `| *${flag}* | ${columns.map((column) => flagCell(column.flags?.[flag])).join(" | ")} |`,
  );
  return [header, rule, ...rows, ...flagRows].join("\n") + "\n";
}

/** `sbox caps`: the capability matrix of every installed provider, from their declarations. */
export const capsCommand: CommandDefinition = {
  name: "caps",
  summary: "capability matrix of every installed provider",
  usage: ["sbox caps [--markdown | --json]"],
  details:
    "Read from each provider's own capability declaration: native = the provider does it, emulated = sbox\n" +
    "builds it from the provider's primitives, - = unsupported. Flags qualify the map.",
  options: {
    markdown: { type: "boolean", description: "print a Markdown table (for docs)" },
  },
  async run(context, args) {
    expectPositionals(args, "caps", [], { max: 0 });
    expectNoCommand(args, "caps");
    const discovered = await context.waitFor("loading providers", () => discoverProviders(context.io.cwd));
    const columns: MatrixColumn[] = discovered
      .filter(
        (provider): provider is DiscoveredProvider & { capabilities: CapabilityMap } =>
          !!provider.capabilities,
      )
      .map((provider) => ({
        name: provider.name,
        capabilities: provider.capabilities,
        flags: provider.flags,
      }));
    if (context.json) {
      context.printJson(
        discovered.map((provider) => ({
          name: provider.name,
          package: provider.packageName,
          status: provider.status,
          capabilities: provider.capabilities ?? null,
          flags: provider.flags ?? null,
          ...(provider.problem ? { problem: provider.problem } : {}),
        })),
      );
      return 0;
    }
    if (booleanOption(args.values, "markdown")) {
      context.print(renderCapabilityMarkdown(columns));
    } else if (columns.length > 0) {
      const rows = [
        ...CAPABILITY_NAMES.map((name) => ({
          label: name,
          cells: columns.map((c) => levelCell(c.capabilities[name], context.out)),
        })),
        ...FLAG_NAMES.map((flag) => ({
          label: context.out.dim(flag),
          cells: columns.map((c) => flagCell(c.flags?.[flag])),
        })),
      ];
      context.print(
        renderTable(
          rows,
          [
            { header: "CAPABILITY", cell: (row) => row.label },
            ...columns.map((column, index) => ({
              header: column.name.toUpperCase(),
              cell: (row: (typeof rows)[number]) => row.cells[index] ?? "",
            })),
          ],
          context.out.bold,
        ),
      );
    }
    for (const provider of discovered) {
      if (provider.status === "missing") {
        context.note(context.err.dim(`${provider.name}: not installed (npm i ${provider.packageName})`));
      } else if (!provider.capabilities) {
        context.note(
          `${context.err.yellow(provider.name)}: ${provider.problem ?? "no capability declaration"}`,
        );
      }
    }
    return 0;
  },
};
