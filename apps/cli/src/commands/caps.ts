import type { CapabilityFlags, CapabilityLevel, CapabilityMap } from "@sbox/core";
import {
  CAPABILITY_AREAS,
  CAPABILITY_DESCRIPTIONS,
  CAPABILITY_NAMES,
  FLAG_DESCRIPTIONS,
  SandboxError,
} from "@sbox/core";
import { booleanOption } from "../args/parse-command-line.js";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import type { Colours } from "../output/colour.js";
import { renderTable } from "../output/table.js";
import { installHint } from "../providers/install-hint.js";
import { knownProvider } from "../providers/known-providers.js";
import {
  type DiscoveredProvider,
  discoverProviders,
  packageForProvider,
  unknownProviderMessage,
} from "../providers/load-provider.js";
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

function levelWord(level: CapabilityLevel | undefined, colours: Colours): string {
  if (level === "native") return colours.green("native");
  if (level === "emulated") return colours.yellow("emulated");
  if (level === "unsupported") return colours.dim("unsupported");
  return "?";
}

/** One provider's capabilities, grouped by area, each with what it gives; then its flags. */
export function renderProviderView(
  provider: DiscoveredProvider & { capabilities: CapabilityMap },
  colours: Colours,
): string {
  const width = Math.max(...CAPABILITY_NAMES.map((name) => name.length), ...FLAG_NAMES.map((f) => f.length));
  const levelWidth = Math.max(
    "unsupported".length,
    ...FLAG_NAMES.map((flag) => flagCell(provider.flags?.[flag]).length),
  );
  const lines = [
    `${colours.bold(provider.name)}  ${colours.dim(provider.packageName)}`,
    colours.dim(
      "native: the provider does it; emulated: sbox builds it from the provider's primitives; unsupported: not there (NotSupported before any call)",
    ),
  ];
  for (const area of CAPABILITY_AREAS) {
    lines.push("", colours.bold(area));
    for (const name of CAPABILITY_NAMES.filter((n) => CAPABILITY_DESCRIPTIONS[n].area === area)) {
      const level = provider.capabilities[name];
      // Pad the plain word: colour codes would throw the columns off.
      const pad = " ".repeat(Math.max(0, levelWidth - String(level ?? "?").length));
      const summary =
        level === "unsupported"
          ? colours.dim(CAPABILITY_DESCRIPTIONS[name].summary)
          : CAPABILITY_DESCRIPTIONS[name].summary;
      lines.push(`  ${name.padEnd(width)}  ${levelWord(level, colours)}${pad}  ${summary}`);
    }
  }
  if (provider.flags) {
    lines.push("", colours.bold("flags"));
    for (const flag of FLAG_NAMES) {
      const value = flagCell(provider.flags[flag]);
      lines.push(
        `  ${flag.padEnd(width)}  ${value.padEnd(levelWidth)}  ${colours.dim(FLAG_DESCRIPTIONS[flag])}`,
      );
    }
  }
  return `${lines.join("\n")}\n`;
}

/** `sbox caps`: the capability matrix of every installed provider, from their declarations. */
export const capsCommand: CommandDefinition = {
  name: "caps",
  summary: "capabilities of every installed provider, or one provider's own view",
  usage: ["sbox caps [--markdown | --json]", "sbox caps PROVIDER [--json]"],
  details:
    "Read from each provider's own capability declaration: native = the provider does it, emulated = sbox\n" +
    "builds it from the provider's primitives, - = unsupported. Flags qualify the map. With a PROVIDER, its\n" +
    "capabilities are listed by area, each with what it gives, then its flags with what they mean.",
  options: {
    markdown: { type: "boolean", description: "print a Markdown table (for docs)" },
  },
  async run(context, args) {
    const [only] = expectPositionals(args, "caps", ["PROVIDER"], { min: 0, max: 1 });
    expectNoCommand(args, "caps");
    const discovered = await context.waitFor("loading providers", () => discoverProviders(context.io.cwd));
    if (only !== undefined) {
      const target = packageForProvider(only);
      const found = discovered.find((provider) => provider.packageName === target.packageName);
      if (!found || found.status === "missing") {
        throw new SandboxError(
          "Validation",
          !knownProvider(only) && !only.includes("/")
            ? unknownProviderMessage(only)
            : `provider "${only}" is not installed: ${installHint(target.packageName, context.io.cwd)}`,
          { retryable: false },
        );
      }
      if (!found.capabilities) {
        throw new SandboxError(
          "Provider",
          `${found.packageName}: ${found.problem ?? "no capability declaration"}`,
          {
            retryable: false,
          },
        );
      }
      if (context.json) {
        context.printJson({
          name: found.name,
          package: found.packageName,
          capabilities: Object.fromEntries(
            CAPABILITY_NAMES.map((name) => [
              name,
              {
                level: found.capabilities![name],
                area: CAPABILITY_DESCRIPTIONS[name].area,
                summary: CAPABILITY_DESCRIPTIONS[name].summary,
              },
            ]),
          ),
          flags: found.flags ?? null,
        });
      } else {
        context.print(
          renderProviderView(found as DiscoveredProvider & { capabilities: CapabilityMap }, context.out),
        );
      }
      return 0;
    }
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
        context.note(
          context.err.dim(
            `${provider.name}: not installed (${installHint(provider.packageName, context.io.cwd)})`,
          ),
        );
      } else if (!provider.capabilities) {
        context.note(
          `${context.err.yellow(provider.name)}: ${provider.problem ?? "no capability declaration"}`,
        );
      }
    }
    return 0;
  },
};
