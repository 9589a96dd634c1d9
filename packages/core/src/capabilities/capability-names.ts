/**
 * The 25 capability names. Each names something a user can observe; the conformance kit has a case for
 * every one. Add a name only together with its conformance case.
 */
export const CAPABILITY_NAMES = [
  "list",
  "stop",
  "pause",
  "setTimeout",
  "streaming",
  "background",
  "killProcess",
  "stdin",
  "pty",
  "filesWatch",
  "filesUpload",
  "codeInterpreter",
  "statefulKernel",
  "exposePort",
  "privatePreview",
  "egressControl",
  "ssh",
  "proxiedFetch",
  "snapshot",
  "fork",
  "volumes",
  "gpu",
  "region",
  "secretsVault",
  "metrics",
] as const;

/** One of the 25 capability names. */
export type CapabilityName = (typeof CAPABILITY_NAMES)[number];

/**
 * How a capability is provided: `native` by the provider's own driver method, `emulated` by the core on top
 * of the provider's primitives, `unsupported` not at all (the gated API is `undefined` and calls throw
 * `NotSupportedError` before any provider call).
 */
export type CapabilityLevel = "native" | "emulated" | "unsupported";

/** A complete declaration: every capability name mapped to its level. Declare it `as const satisfies CapabilityMap`. */
export type CapabilityMap = { readonly [K in CapabilityName]: CapabilityLevel };

/** True when `value` is one of the 25 capability names. */
export function isCapabilityName(value: unknown): value is CapabilityName {
  return typeof value === "string" && (CAPABILITY_NAMES as readonly string[]).includes(value);
}
