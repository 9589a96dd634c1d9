import type { CapabilityName } from "./capability-names.js";

/**
 * Capabilities the core emulates on top of the exec primitive when the provider declares them `emulated`
 * (or, in primitives-only mode, when their native driver methods are hidden). See docs/capabilities.md, E3..E8.
 */
export const AUTOMATIC_EMULATIONS: readonly CapabilityName[] = [
  "streaming",
  "background",
  "killProcess",
  "stdin",
  "filesWatch",
  "filesUpload",
  "metrics",
];

/**
 * Lossy emulations a user must opt into with `emulate: [...]`: snapshot and fork as a tarball of the
 * workdir (no memory, no processes), codeInterpreter as a stateless runner.
 */
export const LOSSY_EMULATIONS = ["snapshot", "fork", "codeInterpreter"] as const;

/** A capability the user may opt into with `emulate: [...]`. */
export type LossyEmulation = (typeof LOSSY_EMULATIONS)[number];

/** Security and billing features that must be real and are never emulated. */
export const NEVER_EMULATED: readonly CapabilityName[] = [
  "egressControl",
  "privatePreview",
  "secretsVault",
  "gpu",
  "region",
  "volumes",
  "pause",
];

/** True when the core can emulate `name` without the user opting in. */
export function isAutomaticEmulation(name: CapabilityName): boolean {
  return AUTOMATIC_EMULATIONS.includes(name);
}

/** True when `name` may be emulated only on the user's request. */
export function isLossyEmulation(name: string): name is LossyEmulation {
  return (LOSSY_EMULATIONS as readonly string[]).includes(name);
}
