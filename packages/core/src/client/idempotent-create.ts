import type { ProviderRuntime } from "../sandbox/provider-runtime.js";
import type { DriverSandbox } from "../spec/provider-spec.js";
import type { SandboxSpec, SandboxState } from "../spec/sandbox-spec.js";
import { IDEMPOTENCY_KEY_METADATA_KEY } from "./validate-spec.js";

/** States of a sandbox an earlier create made that a repeated create returns (anything not gone). */
const REUSABLE: readonly SandboxState[] = ["starting", "running", "paused", "stopped", "unknown"];

/**
 * One create attempt of `spec` on `runtime`, idempotent by `spec.idempotencyKey`. A provider that honours
 * keys gets the key and does it itself. For any other the core records the key in the sandbox's metadata
 * (validateSpec made sure the provider keeps metadata and lists) and, before every attempt, looks for a
 * sandbox that already carries it: a repeated create, or a retry after an attempt whose answer was lost,
 * returns that sandbox instead of making a second one.
 */
export function idempotentCreate(
  runtime: ProviderRuntime,
  spec: SandboxSpec,
  signal: AbortSignal,
): () => Promise<DriverSandbox> {
  const key = spec.idempotencyKey;
  const { driver } = runtime;
  if (key === undefined || runtime.provider.honours.includes("idempotencyKey") || !driver.doList) {
    return () => driver.doCreate(spec, { signal });
  }
  const labelled: SandboxSpec = {
    ...spec,
    metadata: { ...spec.metadata, [IDEMPOTENCY_KEY_METADATA_KEY]: key },
  };
  const filter = { metadata: { [IDEMPOTENCY_KEY_METADATA_KEY]: key } };
  return async () => {
    for await (const info of driver.doList!(filter, { signal })) {
      // The provider may filter coarsely or not at all: the key itself decides.
      if (info.metadata[IDEMPOTENCY_KEY_METADATA_KEY] !== key || !REUSABLE.includes(info.state)) continue;
      return driver.doConnect(info.id, { signal });
    }
    return driver.doCreate(labelled, { signal });
  };
}
