import type { CapabilityName } from "./capability-names.js";

/**
 * The gated namespace each capability opens on a sandbox (`sandbox.ports` for `exposePort`, ...). A
 * namespace is `undefined` exactly when its capability is unsupported; `sandbox.can()` and the conformance
 * kit's manifest case read this table.
 */
export const CAPABILITY_NAMESPACES: {
  readonly exposePort: "ports";
  readonly snapshot: "snapshots";
  readonly fork: "fork";
  readonly egressControl: "network";
  readonly pty: "pty";
  readonly codeInterpreter: "code";
  readonly ssh: "ssh";
} = {
  exposePort: "ports",
  snapshot: "snapshots",
  fork: "fork",
  egressControl: "network",
  pty: "pty",
  codeInterpreter: "code",
  ssh: "ssh",
};

/** A capability that opens a gated namespace. */
export type NamespacedCapability = keyof typeof CAPABILITY_NAMESPACES;

/** The namespace `capability` opens, or undefined when it opens none. */
export function namespaceOf(
  capability: CapabilityName,
): (typeof CAPABILITY_NAMESPACES)[NamespacedCapability] | undefined {
  return (
    CAPABILITY_NAMESPACES as Partial<
      Record<CapabilityName, (typeof CAPABILITY_NAMESPACES)[NamespacedCapability]>
    >
  )[capability];
}
