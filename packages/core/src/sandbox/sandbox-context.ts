import type { CapabilityName } from "../capabilities/capability-names.js";
import { NotSupportedError, type SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import type { DriverSandbox } from "../spec/provider-spec.js";
import type { ProviderRuntime } from "./provider-runtime.js";

/** What every part of one sandbox facade shares: its runtime, its driver handle and the error path. */
export interface SandboxContext {
  readonly runtime: ProviderRuntime;
  readonly handle: DriverSandbox;
  /** `"<provider>:<native id>"`. */
  readonly id: string;
  /** Reports an error to the client's `onError` hooks. */
  readonly reportError: (error: SandboxError, operation: string) => void;
}

/**
 * Runs one facade operation so that whatever it throws leaves as a `SandboxError` naming the provider
 * and the operation, and is reported to the hooks once.
 */
export async function guard<T>(
  context: SandboxContext,
  operation: string,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const wrapped = toSandboxError(error, { provider: context.runtime.name, operation });
    context.reportError(wrapped, operation);
    throw wrapped;
  }
}

/** Throws `NotSupportedError` (before any provider call) when `capability` is unsupported. */
export function requireCapability(context: SandboxContext, capability: CapabilityName): void {
  if (context.runtime.capabilities.map[capability] === "unsupported") {
    throw new NotSupportedError(capability, context.runtime.name);
  }
}

/** Returns a driver method or throws `NotSupportedError` naming the feature when the provider lacks it. */
export function driverMethod<T>(context: SandboxContext, method: T | undefined, feature: string): T {
  if (method === undefined) throw new NotSupportedError(feature, context.runtime.name);
  return method;
}
