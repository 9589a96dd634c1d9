import { type EgressPolicy, SandboxError } from "@sbox/core/spec";

/** E2B's sentinel for "every destination" (the SDK's `ALL_TRAFFIC`). */
export const ALL_TRAFFIC = "0.0.0.0/0";

/** The egress part of E2B's network options: what `Sandbox.create({ network })` and `updateNetwork` take. */
export interface E2BEgressRules {
  allowOut?: string[];
  denyOut?: string[];
}

/**
 * Turns a policy into E2B egress rules. E2B lets `allowOut` entries win over `denyOut`, so an allow-list
 * is "deny everything, allow these"; allow-all is no rule at all (an update with no rule clears them).
 */
export function egressRules(policy: EgressPolicy): E2BEgressRules {
  if (policy === "allow-all") return {};
  if (policy === "block-all") return { denyOut: [ALL_TRAFFIC] };
  if (typeof policy !== "object" || policy === null || !Array.isArray(policy.allow)) {
    throw new SandboxError("Validation", `invalid egress policy ${JSON.stringify(policy)}`);
  }
  for (const entry of policy.allow) {
    if (typeof entry !== "string" || entry.trim() === "" || /\s/.test(entry)) {
      throw new SandboxError(
        "Validation",
        `invalid egress allow entry ${JSON.stringify(entry)}: a host, IP or CIDR`,
      );
    }
  }
  if (policy.allow.length === 0) return { denyOut: [ALL_TRAFFIC] };
  return { allowOut: [...policy.allow], denyOut: [ALL_TRAFFIC] };
}
