import type { CapabilityMap } from "../capabilities/capability-names.js";
import { checkProviderManifest } from "../capabilities/manifest.js";
import { SandboxError } from "../errors/sandbox-error.js";
import type { SandboxProvider } from "./provider-spec.js";

/**
 * Declares a provider. Checks the declaration against the driver methods at definition time, so a
 * provider that claims a capability without implementing it fails loudly where it is written.
 *
 * ```ts
 * export const myProvider = (opts: Options) => defineProvider({
 *   specificationVersion: "v1",
 *   name: "mine",
 *   capabilities: myCapabilities, // `as const satisfies CapabilityMap`
 *   flags: { ... },
 *   honours: ["env", "metadata"],
 *   doCreate, doConnect, doDestroy, doGetInfo, doExec,
 * });
 * ```
 */
export function defineProvider<const TCaps extends CapabilityMap, TNative = unknown>(
  provider: SandboxProvider<TCaps, TNative>,
): SandboxProvider<TCaps, TNative> {
  const problems = checkProviderManifest(provider as unknown as SandboxProvider);
  if (problems.length > 0) {
    throw new SandboxError(
      "Validation",
      `provider ${String(provider.name)} declares what it does not implement:\n- ${problems.map((p) => p.message).join("\n- ")}`,
      { provider: provider.name, retryable: false },
    );
  }
  return provider;
}
