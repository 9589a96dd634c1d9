import type { OptionSpec, OptionSpecs } from "./args/option-spec.js";
import { GLOBAL_OPTIONS } from "./args/option-spec.js";
import type { CommandDefinition } from "./commands/command-definition.js";
import type { Colours } from "./output/colour.js";
import { EXIT_CODE_HELP } from "./output/exit-codes.js";
import { KNOWN_PROVIDERS } from "./providers/known-providers.js";

function optionLines(options: OptionSpecs): string[] {
  const entries = Object.entries(options).map(([name, spec]: [string, OptionSpec]) => {
    const flag = `${spec.short ? `-${spec.short}, ` : "    "}--${name}${spec.type === "string" ? ` ${spec.valueName ?? "VALUE"}` : ""}`;
    return [flag, spec.description] as const;
  });
  const width = Math.min(34, Math.max(0, ...entries.map(([flag]) => flag.length)));
  return entries.map(([flag, description]) => `  ${flag.padEnd(width)}  ${description}`);
}

/** `sbox --help`. */
export function renderMainHelp(commands: readonly CommandDefinition[], version: string, c: Colours): string {
  const width = Math.max(...commands.map((command) => command.name.length));
  const lines = [
    `${c.bold("sbox")} ${version} — code sandboxes on any provider, one command line`,
    "",
    c.bold("Usage:"),
    "  sbox [options] <command> [options] [ID] [[--] CMD [ARG...]]",
    "  sbox <command> --help",
    "  Options may come before or after the command; for run and exec the command to run starts at its",
    "  first word (after the id for exec), with or without -- before it.",
    "",
    c.bold("Commands:"),
    ...commands.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`),
    "",
    c.bold("Global options:"),
    ...optionLines({
      ...GLOBAL_OPTIONS,
      version: { type: "boolean", short: "V", description: "print the version" },
    }),
    "",
    c.bold("Providers:"),
    `  ${KNOWN_PROVIDERS.map((provider) => `${provider.name} (${provider.packageName})`).join(", ")};`,
    "  any other installed @sbox/provider-<name> package is found too. Default: local, the embedded one.",
    "  Credentials come only from each provider's environment variables or -o options; see `sbox doctor`.",
    "",
    c.bold("Environment:"),
    "  SBOX_PROVIDER   default provider          SBOX_HOME   state root (default ~/.sbox)",
    "  NO_COLOR        disable colour            SBOX_DEBUG=1  same as --debug",
    "  SBOX_RECORDS=0  do not record sandboxes in $SBOX_HOME/manager.db (@sbox/manager)",
    "  SBOX_CONFIG     config file (default $SBOX_HOME/config.json): default provider and options, e.g.",
    '                  { "provider": "docker", "providers": { "docker": { "image": "sbox-busybox:latest" } } }',
    "  SBOX_DOCKER_IMAGE  docker's image when neither -t nor -o image= names one (sbox doctor lists local ones)",
    "",
    c.bold("Errors:"),
    "  One line on stderr: error[<code>]: <message>  (stack and causes with --debug)",
    "",
    c.bold("Exit codes:"),
    ...EXIT_CODE_HELP.map(([code, text]) => `  ${code < 0 ? "   " : String(code).padStart(3)}  ${text}`),
    "",
    c.bold("Examples:"),
    "  sbox run sh -c 'echo hello from $(hostname)'",
    "  id=$(sbox create -l owner=me) && sbox exec $id uname -a && sbox rm $id",
    "  sbox -p docker -t sbox-busybox:latest run ls -la /",
    "  sbox caps --markdown",
    "",
  ];
  return lines.join("\n");
}

/** `sbox <command> --help`. */
export function renderCommandHelp(command: CommandDefinition, c: Colours): string {
  const lines = [
    `${c.bold(`sbox ${command.name}`)} — ${command.summary}`,
    "",
    c.bold("Usage:"),
    ...command.usage.map((usage) => `  ${usage}`),
  ];
  if (command.details) lines.push("", ...command.details.split("\n"));
  if (Object.keys(command.options).length > 0)
    lines.push("", c.bold("Options:"), ...optionLines(command.options));
  lines.push("", c.bold("Global options:"), ...optionLines(GLOBAL_OPTIONS));
  if (command.examples && command.examples.length > 0) {
    lines.push("", c.bold("Examples:"), ...command.examples.map((example) => `  ${example}`));
  }
  lines.push("");
  return lines.join("\n");
}
