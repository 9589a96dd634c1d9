import type { CapabilityMap } from "../capabilities/capability-names.js";
import { checkProviderManifest } from "../capabilities/manifest.js";
import { SandboxError } from "../errors/sandbox-error.js";
import { withDriverErrorMapping } from "./driver-errors.js";
import type { SandboxProviderV1 } from "./provider-spec.js";

/**
 * Declares a provider. Checks the declaration against the driver methods at definition time, so a
 * provider that claims a capability without implementing it fails loudly where it is written, and wraps
 * every driver method so that what it throws leaves as a `SandboxError`: mapped by the provider's
 * `mapError` (or the core's default mapping), with the provider's name, without its `secrets`. A provider
 * throws whatever its SDK throws and never wraps errors by hand.
 *
 * ```ts
 * export const myProvider = (opts: Options) => defineProvider({
 *   specificationVersion: "v1",
 *   name: "mine",
 *   capabilities: myCapabilities, // `as const satisfies CapabilityMap`
 *   flags: { ... },
 *   honours: ["env", "metadata"],
 *   secrets: () => [opts.apiKey],
 *   mapError: (error, { operation }) => mapMySdkError(error, operation),
 *   doCreate, doConnect, doDestroy, doGetInfo, doExec,
 * });
 * ```
 */
export function defineProvider<const TCaps extends CapabilityMap, TNative = unknown>(
  provider: SandboxProviderV1<TCaps, TNative>,
): SandboxProviderV1<TCaps, TNative> {
  const problems = checkProviderManifest(provider as unknown as SandboxProviderV1);
  if (problems.length > 0) {
    throw new SandboxError(
      "Validation",
      `provider ${String(provider.name)} declares what it does not implement:\n- ${problems.map((p) => p.message).join("\n- ")}`,
      { provider: provider.name, retryable: false },
    );
  }
  return withDriverErrorMapping(provider);
}
