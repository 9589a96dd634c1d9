/**
 * E2B's network configuration (`SandboxNetworkConfig`) turned into the backend's egress policy, which
 * enforces it for real: no rule is allow-all; `denyOut: ["0.0.0.0/0"]` (E2B's "all traffic") is block-all,
 * or an allow-list when `allowOut` names destinations (allowed entries win over denied ones);
 * `allow_internet_access: false` is the same as denying all traffic.
 *
 * What the backend cannot enforce is refused with a 400 naming why — a deny-list of single addresses, an
 * allow-list on a backend without one, header transforms and egress proxies (E2B's own egress proxy does
 * those) — never accepted and ignored.
 */
import type { EgressPolicy } from "@sbox/core";

/** E2B's "all traffic" CIDR (the SDK's `ALL_TRAFFIC`). */
export const ALL_TRAFFIC = "0.0.0.0/0";

/** The egress fields of E2B's network configuration. */
export interface E2BNetworkConfig {
  allowOut?: string[] | undefined;
  denyOut?: string[] | undefined;
  allowPublicTraffic?: boolean | undefined;
  maskRequestHost?: string | undefined;
  rules?: Record<string, unknown> | undefined;
  egressProxy?: unknown;
}

/** Parses the `network` field of a create or update body; a string is the 400 message. */
export function parseNetworkConfig(value: unknown): E2BNetworkConfig | string {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) return "network must be an object";
  const raw = value as Record<string, unknown>;
  const list = (name: string): string[] | string | undefined => {
    const entries = raw[name];
    if (entries === undefined || entries === null) return undefined;
    if (!Array.isArray(entries) || !entries.every((e) => typeof e === "string" && e.trim() !== "")) {
      return `network.${name} must be a list of non-empty strings`;
    }
    return entries as string[];
  };
  const allowOut = list("allowOut");
  if (typeof allowOut === "string") return allowOut;
  const denyOut = list("denyOut");
  if (typeof denyOut === "string") return denyOut;
  if (raw.allowPublicTraffic !== undefined && typeof raw.allowPublicTraffic !== "boolean") {
    return "network.allowPublicTraffic must be a boolean";
  }
  if (raw.maskRequestHost !== undefined && typeof raw.maskRequestHost !== "string") {
    return "network.maskRequestHost must be a string";
  }
  const config: E2BNetworkConfig = {};
  if (allowOut) config.allowOut = allowOut;
  if (denyOut) config.denyOut = denyOut;
  if (typeof raw.allowPublicTraffic === "boolean") config.allowPublicTraffic = raw.allowPublicTraffic;
  if (typeof raw.maskRequestHost === "string") config.maskRequestHost = raw.maskRequestHost;
  if (raw.rules !== undefined && raw.rules !== null) config.rules = raw.rules as Record<string, unknown>;
  if (raw.egressProxy !== undefined && raw.egressProxy !== null) config.egressProxy = raw.egressProxy;
  return config;
}

/** The backend policy for a configuration, or the 400 message when it cannot be enforced. */
export function egressPolicyOf(
  config: E2BNetworkConfig,
  allowInternetAccess: boolean | undefined,
  backend: { name: string; canControlEgress: boolean },
): EgressPolicy | { refused: string } {
  if (config.rules && Object.keys(config.rules).length > 0) {
    return {
      refused: "network.rules (header transforms) need E2B's egress proxy, which this emulator does not run",
    };
  }
  if (config.egressProxy !== undefined) {
    return { refused: "network.egressProxy is not supported by this emulator (no egress proxy runs here)" };
  }
  const deny = config.denyOut ?? [];
  const allow = config.allowOut ?? [];
  const denyAll = allowInternetAccess === false || deny.includes(ALL_TRAFFIC);
  const partialDeny = deny.filter((entry) => entry !== ALL_TRAFFIC);
  if (!denyAll && partialDeny.length > 0) {
    return {
      refused: `network.denyOut without ${ALL_TRAFFIC} (a deny-list of ${partialDeny.join(", ")}) cannot be enforced by the ${backend.name} backend: it enforces block-all and allow-lists only`,
    };
  }
  const policy: EgressPolicy = !denyAll ? "allow-all" : allow.length === 0 ? "block-all" : { allow };
  if (policy !== "allow-all" && !backend.canControlEgress) {
    return {
      refused: `the ${backend.name} backend of this emulator cannot restrict egress (its sandboxes have no network of their own)`,
    };
  }
  return policy;
}
