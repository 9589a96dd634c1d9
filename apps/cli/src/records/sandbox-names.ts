import { SandboxError, type SandboxSpec } from "@sbox/core";
import type { OptionSpec } from "../args/option-spec.js";
import { type ParsedCommandLine, stringOption } from "../args/parse-command-line.js";
import { usageError } from "../args/usage-error.js";
import type { CliContext } from "../cli-context.js";

/**
 * Metadata label carrying the name given with `sbox create --name`: names are found by listing with it,
 * so they work with or without records, on every provider that keeps metadata and lists.
 */
export const NAME_LABEL = "sbox-name";

/** The `--name` option of commands that take a sandbox id. */
export const NAME_OPTION: OptionSpec = {
  type: "string",
  valueName: "NAME",
  description: "the sandbox created with --name NAME, instead of its ID",
};

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

function checkName(name: string): string {
  if (!NAME_PATTERN.test(name)) {
    throw usageError(
      `--name ${JSON.stringify(name)}: a name is 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  }
  return name;
}

/** Live sandboxes of the chosen provider that carry `name`. */
async function sandboxesNamed(context: CliContext, name: string): Promise<string[]> {
  const client = await context.client();
  if (client.capabilities.map.list === "unsupported") {
    throw new SandboxError(
      "NotSupported",
      `provider ${client.provider} cannot list sandboxes, so it cannot find them by name: use the id`,
      { retryable: false },
    );
  }
  return context.waitFor(`looking up ${name}`, async () => {
    const ids: string[] = [];
    for await (const info of client.list({ metadata: { [NAME_LABEL]: name } })) {
      if (info.state !== "destroyed") ids.push(info.id);
    }
    return ids;
  });
}

/** The id of the one live sandbox named `name` on the chosen provider. */
export async function resolveSandboxName(context: CliContext, name: string): Promise<string> {
  const ids = await sandboxesNamed(context, checkName(name));
  if (ids.length === 1) return ids[0]!;
  if (ids.length === 0) {
    throw new SandboxError(
      "NotFound",
      `no sandbox named ${JSON.stringify(name)} on provider ${context.providerName} (names are given with sbox create --name)`,
      { retryable: false },
    );
  }
  throw new SandboxError(
    "Conflict",
    `${ids.length} sandboxes are named ${JSON.stringify(name)}: ${ids.join(", ")}; use an id`,
    { retryable: false },
  );
}

/**
 * The sandbox id of a command line and the positionals after it: the first positional, or the sandbox
 * named by `--name` (then every positional is one of the others).
 */
export async function sandboxTarget(
  context: CliContext,
  args: ParsedCommandLine,
): Promise<{ id: string | undefined; rest: string[] }> {
  const name = stringOption(args.values, "name");
  if (name !== undefined) return { id: await resolveSandboxName(context, name), rest: [...args.positionals] };
  return { id: args.positionals[0], rest: args.positionals.slice(1) };
}

/**
 * Adds the name label to a spec that names its sandbox, after checking that no live sandbox of the
 * provider has that name already. `spec.name` itself stays only where the provider honours it: the
 * label is what sbox finds the sandbox by.
 */
export async function withNameLabel(
  context: CliContext,
  spec: SandboxSpec,
  honoursName: boolean,
): Promise<SandboxSpec> {
  if (spec.name === undefined) return spec;
  const name = checkName(spec.name);
  const taken = await sandboxesNamed(context, name);
  if (taken.length > 0) {
    throw new SandboxError(
      "Conflict",
      `a sandbox named ${JSON.stringify(name)} exists already: ${taken[0]}`,
      {
        retryable: false,
      },
    );
  }
  const { name: _name, ...rest } = spec;
  return {
    ...(honoursName ? spec : rest),
    metadata: { ...(spec.metadata ?? {}), [NAME_LABEL]: name },
  };
}

/** The sandbox ids of a command that takes several: the one named by `--name`, then the positionals. */
export async function sandboxTargets(context: CliContext, args: ParsedCommandLine): Promise<string[]> {
  const name = stringOption(args.values, "name");
  return [...(name === undefined ? [] : [await resolveSandboxName(context, name)]), ...args.positionals];
}
