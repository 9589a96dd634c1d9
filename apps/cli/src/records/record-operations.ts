import type { SandboxProvider } from "@sbox/core";
import type { SandboxManager, SandboxRecord } from "@sbox/manager";
import type { CliContext } from "../cli-context.js";

/** A manager over the named providers, or undefined when records are off. Providers that fail to load are left out. */
export async function managerFor(
  context: CliContext,
  names: readonly string[],
): Promise<SandboxManager | undefined> {
  const records = await context.records();
  if (!records) return undefined;
  const providers: Record<string, SandboxProvider> = {};
  for (const name of new Set(names)) {
    try {
      providers[name] = await context.provider(name);
    } catch {
      // A record of a provider that is not installed here cannot be acted on; the others still can.
    }
  }
  if (Object.keys(providers).length === 0) return undefined;
  return records.manager(providers);
}

/** The full `"<provider>:<native id>"` form of an id as the user typed it. */
export function fullSandboxId(context: CliContext, id: string): string {
  const provider = context.providerOfId(id);
  return id.startsWith(`${provider}:`) ? id : `${provider}:${id}`;
}

/** The live record of a sandbox, when records are on and the CLI recorded it. */
export async function recordOfSandbox(context: CliContext, id: string): Promise<SandboxRecord | undefined> {
  const records = await context.records();
  return records?.recordOf(fullSandboxId(context, id));
}

/**
 * Runs every lifecycle verb (stop, pause, resume, destroy) through the manager when the sandbox has a
 * record, so the record's status, lease and history stay true whichever verb was used; returns false
 * when there is no record (the caller acts directly).
 */
export async function viaRecord(
  context: CliContext,
  id: string,
  operation: "stop" | "pause" | "resume" | "destroy",
): Promise<boolean> {
  const record = await recordOfSandbox(context, id);
  if (!record) return false;
  const manager = await managerFor(context, [record.provider]);
  if (!manager) return false;
  await manager[operation](record.id);
  return true;
}
