import type { EgressPolicy } from "@sbox/core/spec";
import { SandboxError } from "@sbox/core/spec";
import { VERCEL_PROVIDER_NAME } from "./vercel-names.js";

const CIDR = /^[0-9a-fA-F:.]+\/\d{1,3}$|^\d{1,3}(\.\d{1,3}){3}$/;

/**
 * An sbox egress policy as Vercel's network policy: `allow-all`, `deny-all`, or an allow list split into
 * domains (`allow`) and addresses (`subnets.allow`, a bare IPv4 address as its /32).
 */
export function networkPolicyOf(
  policy: EgressPolicy,
): "allow-all" | "deny-all" | { allow: string[]; subnets?: { allow: string[] } } {
  if (policy === "allow-all") return "allow-all";
  if (policy === "block-all") return "deny-all";
  if (typeof policy !== "object" || policy === null || !Array.isArray(policy.allow)) {
    throw new SandboxError(
      "Validation",
      "vercel: an egress policy is allow-all, block-all or { allow: [...] }",
      {
        provider: VERCEL_PROVIDER_NAME,
        retryable: false,
      },
    );
  }
  const domains = policy.allow.filter((entry) => !CIDR.test(entry));
  const subnets = policy.allow
    .filter((entry) => CIDR.test(entry))
    .map((entry) => (entry.includes("/") ? entry : `${entry}/32`));
  if (domains.length === 0 && subnets.length === 0) return "deny-all";
  return { allow: domains, ...(subnets.length > 0 ? { subnets: { allow: subnets } } : {}) };
}
