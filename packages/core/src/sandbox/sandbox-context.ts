import type { CapabilityName } from "../capabilities/capability-names.js";
import { redactError } from "../errors/redact-error.js";
import { NotSupportedError, SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import type { DriverCallOptions, DriverSandbox } from "../spec/provider-spec.js";
import type { ProviderRuntime, RuntimeDriver } from "./provider-runtime.js";

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
 * The one way an error leaves a facade operation: as a `SandboxError` naming the provider and the
 * operation, without the provider's secrets or engine host paths anywhere in it (cause chain included),
 * reported to the hooks once.
 */
export function failure(context: SandboxContext, error: unknown, operation: string): SandboxError {
  const wrapped = redactError(
    toSandboxError(error, { provider: context.runtime.name, operation }),
    context.runtime.secrets(),
  );
  context.reportError(wrapped, operation);
  return wrapped;
}

/** Runs one facade operation so that whatever it throws leaves through {@link failure}. */
export async function guard<T>(
  context: SandboxContext,
  operation: string,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw failure(context, error, operation);
  }
}

/** A `Validation` error for bad input, raised before any provider call. */
export function invalidInput(message: string, provider?: string): SandboxError {
  return new SandboxError("Validation", message, { provider, retryable: false });
}

/** Options of a driver call the user gave no signal for (or the one they gave). */
export function callOptions(signal?: AbortSignal): DriverCallOptions {
  return { signal: signal ?? new AbortController().signal };
}

/** Throws `NotSupportedError` (before any provider call) when `capability` is unsupported. */
export function requireCapability(
  context: SandboxContext,
  capability: CapabilityName,
  feature: string = capability,
  detail?: string,
): void {
  if (context.runtime.capabilities.map[capability] === "unsupported") {
    throw new NotSupportedError(feature, context.runtime.name, detail);
  }
}

/**
 * The runtime's driver method for a gated feature, checked once: `NotSupportedError` (before any provider
 * call) when the capability is unsupported or the method is absent. `feature` names it in the error
 * (default: the capability), `detail` says why.
 */
export function gatedMethod<K extends keyof RuntimeDriver>(
  context: SandboxContext,
  capability: CapabilityName,
  method: K,
  feature: string = capability,
  detail?: string,
): NonNullable<RuntimeDriver[K]> {
  requireCapability(context, capability, feature, detail);
  const fn = context.runtime.driver[method];
  if (fn === undefined) throw new NotSupportedError(feature, context.runtime.name);
  return fn as NonNullable<RuntimeDriver[K]>;
}
