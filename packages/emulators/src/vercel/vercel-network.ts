/**
 * Network policies as the API takes and gives them. The SDK sends `{ mode: "allow-all" | "deny-all" }` or
 * `{ allow: string[] | Record<domain, rules>, subnets?: { allow?, deny? } }`, and reads back
 * `{ mode: "allow-all" | "deny-all" }` or `{ mode: "custom", allowedDomains?, allowedCIDRs?, deniedCIDRs? }`.
 * Enforcement is the backend's egress control: deny-all blocks everything, a custom policy allows only the
 * listed domains and CIDRs. Header-injection and forwarding rules need the service's TLS-terminating proxy
 * and are refused rather than accepted and ignored; so are denied CIDRs inside an allow-all.
 */
import type { EgressPolicy } from "@sbox/core";

/** A policy as the API answers it. */
export type VercelNetworkPolicy =
  | { mode: "allow-all" }
  | { mode: "deny-all" }
  | { mode: "custom"; allowedDomains?: string[]; allowedCIDRs?: string[]; deniedCIDRs?: string[] };

/** The request body could not be taken (answered 400 with `message`). */
export class NetworkPolicyError extends Error {}

function strings(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || !value.every((entry) => typeof entry === "string" && entry !== "")) {
    throw new NetworkPolicyError(`networkPolicy.${field} must be an array of non-empty strings`);
  }
  return value as string[];
}

/** Reads a request's policy (`undefined` → allow-all). */
export function parseNetworkPolicy(body: unknown): VercelNetworkPolicy {
  if (body === undefined || body === null) return { mode: "allow-all" };
  if (typeof body !== "object" || Array.isArray(body)) {
    throw new NetworkPolicyError("networkPolicy must be an object");
  }
  const policy = body as Record<string, unknown>;
  if (policy.mode === "allow-all" || policy.mode === "deny-all") return { mode: policy.mode };
  if (policy.mode !== undefined) {
    throw new NetworkPolicyError(`networkPolicy.mode must be "allow-all" or "deny-all"`);
  }
  let allowedDomains: string[] | undefined;
  if (Array.isArray(policy.allow)) allowedDomains = strings(policy.allow, "allow");
  else if (policy.allow !== undefined) {
    if (typeof policy.allow !== "object" || policy.allow === null) {
      throw new NetworkPolicyError("networkPolicy.allow must be an array or an object of rules");
    }
    const entries = Object.entries(policy.allow as Record<string, unknown>);
    if (entries.some(([, rules]) => !Array.isArray(rules) || rules.length > 0)) {
      throw new NetworkPolicyError(
        "networkPolicy.allow rules (header transforms, forwardURL, responses) are not supported by the emulator",
      );
    }
    allowedDomains = entries.map(([domain]) => domain);
  }
  const subnets = (policy.subnets ?? {}) as Record<string, unknown>;
  const allowedCIDRs = subnets.allow === undefined ? undefined : strings(subnets.allow, "subnets.allow");
  const deniedCIDRs = subnets.deny === undefined ? undefined : strings(subnets.deny, "subnets.deny");
  if (deniedCIDRs && deniedCIDRs.length > 0) {
    throw new NetworkPolicyError("networkPolicy.subnets.deny is not supported by the emulator");
  }
  return {
    mode: "custom",
    ...(allowedDomains ? { allowedDomains } : {}),
    ...(allowedCIDRs ? { allowedCIDRs } : {}),
  };
}

/** The backend egress policy that enforces `policy`. */
export function egressOf(policy: VercelNetworkPolicy): EgressPolicy {
  if (policy.mode === "allow-all") return "allow-all";
  if (policy.mode === "deny-all") return "block-all";
  const allow = [...(policy.allowedDomains ?? []), ...(policy.allowedCIDRs ?? [])];
  return allow.length === 0 ? "block-all" : { allow };
}
