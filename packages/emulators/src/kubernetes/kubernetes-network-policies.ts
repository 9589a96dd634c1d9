/**
 * NetworkPolicy enforcement, the emulator's CNI. A pod's egress is what the policies selecting it allow:
 * none select it (for egress) → everything; they allow nothing (`policyTypes: [Egress]`, no rules) →
 * nothing; a rule without `to` and `ports` → everything; ipBlock rules → the listed CIDRs. The result is
 * applied to the pod's backend sandbox (`setEgress`), at boot and whenever a policy changes, so a blocked
 * pod really cannot connect. What the backend cannot enforce is refused when the policy is written (422),
 * never accepted and ignored: allow-lists unless the backend enforces them, selector-based peers and port
 * restrictions. Ingress rules are stored and answered with a warning: port-forward (like on a real
 * cluster) does not pass through them, and the emulator has no pod network to filter.
 */
import type { EgressPolicy } from "@sbox/core/spec";
import type { KubeObject } from "./kubernetes-objects.js";
import { NETWORK_POLICY } from "./kubernetes-resources.js";
import { labelSelectorObject } from "./kubernetes-selectors.js";
import { invalid } from "./kubernetes-status.js";
import type { KubernetesStore } from "./kubernetes-store.js";

interface EgressRule {
  to?: {
    ipBlock?: { cidr: string; except?: string[] };
    podSelector?: unknown;
    namespaceSelector?: unknown;
  }[];
  ports?: unknown[];
}

interface PolicySpec {
  podSelector?: {
    matchLabels?: Record<string, string>;
    matchExpressions?: { key: string; operator: string; values?: string[] }[];
  };
  policyTypes?: string[];
  egress?: EgressRule[];
  ingress?: unknown[];
}

function specOf(policy: KubeObject): PolicySpec {
  return (policy.spec ?? {}) as PolicySpec;
}

function typesOf(spec: PolicySpec): string[] {
  if (spec.policyTypes && spec.policyTypes.length > 0) return spec.policyTypes;
  return spec.egress ? ["Ingress", "Egress"] : ["Ingress"];
}

/** What one policy allows out of the pods it selects. */
function egressOfPolicy(spec: PolicySpec): EgressPolicy | undefined {
  if (!typesOf(spec).includes("Egress")) return undefined;
  const rules = spec.egress ?? [];
  if (rules.length === 0) return "block-all";
  const cidrs: string[] = [];
  for (const rule of rules) {
    if (!rule.to || rule.to.length === 0) {
      if (!rule.ports || rule.ports.length === 0) return "allow-all";
      continue;
    }
    for (const peer of rule.to) if (peer.ipBlock?.cidr) cidrs.push(peer.ipBlock.cidr);
  }
  return cidrs.length > 0 ? { allow: cidrs } : "block-all";
}

/** Admission of network policies against what the backend can enforce; returns warnings for the client. */
export function admitNetworkPolicy(
  policy: KubeObject,
  enforcesAllowLists: boolean,
  enforcesEgress: boolean,
): string[] {
  const spec = specOf(policy);
  const name = policy.metadata.name ?? "";
  const refuse = (field: string, why: string) => {
    throw invalid("NetworkPolicy", "networking.k8s.io", name, [
      {
        field,
        message: `Forbidden: ${why} (the sbox emulator refuses rules its backend cannot enforce rather than ignore them)`,
        reason: "FieldValueForbidden",
      },
    ]);
  };
  if (spec.podSelector === undefined || typeof spec.podSelector !== "object") {
    throw invalid("NetworkPolicy", "networking.k8s.io", name, [
      { field: "spec.podSelector", message: "Required value", reason: "FieldValueRequired" },
    ]);
  }
  (spec.egress ?? []).forEach((rule, i) => {
    if (rule.ports && rule.ports.length > 0 && rule.to && rule.to.length > 0)
      refuse(`spec.egress[${i}].ports`, "egress port restrictions are not enforced");
    if (rule.ports && rule.ports.length > 0 && (!rule.to || rule.to.length === 0))
      refuse(`spec.egress[${i}].ports`, "egress port restrictions are not enforced");
    (rule.to ?? []).forEach((peer, j) => {
      if (!peer.ipBlock)
        refuse(`spec.egress[${i}].to[${j}]`, "pod and namespace selectors as egress peers are not enforced");
      if (peer.ipBlock?.except && peer.ipBlock.except.length > 0)
        refuse(`spec.egress[${i}].to[${j}].ipBlock.except`, "ipBlock exceptions are not enforced");
    });
  });
  const effect = egressOfPolicy(spec);
  if (effect !== undefined && effect !== "allow-all" && !enforcesEgress) {
    refuse("spec.policyTypes", "this emulator's backend cannot restrict egress");
  }
  if (typeof effect === "object" && !enforcesAllowLists) {
    refuse(
      "spec.egress",
      `egress allow-lists (${effect.allow.join(", ")}) are not enforced by this backend; only deny-all and allow-all egress are`,
    );
  }
  const warnings: string[] = [];
  if (typesOf(spec).includes("Ingress")) {
    warnings.push(
      `networkpolicy "${name}": ingress rules are stored but not enforced by the sbox emulator (it has no pod network to filter)`,
    );
  }
  return warnings;
}

/** The egress a pod gets from the policies of its namespace. */
export function egressForPod(store: KubernetesStore, pod: KubeObject): EgressPolicy {
  const labels = pod.metadata.labels ?? {};
  const effects = store
    .list(NETWORK_POLICY, pod.metadata.namespace ?? "default")
    .filter(
      (policy) =>
        labelSelectorObject(specOf(policy).podSelector)(labels) ||
        isEmptySelector(specOf(policy).podSelector),
    )
    .map((policy) => egressOfPolicy(specOf(policy)))
    .filter((e): e is EgressPolicy => e !== undefined);
  if (effects.length === 0) return "allow-all";
  if (effects.includes("allow-all")) return "allow-all";
  const cidrs = effects.flatMap((e) => (typeof e === "object" ? e.allow : []));
  return cidrs.length > 0 ? { allow: [...new Set(cidrs)] } : "block-all";
}

function isEmptySelector(selector: PolicySpec["podSelector"]): boolean {
  return (
    !!selector &&
    Object.keys(selector.matchLabels ?? {}).length === 0 &&
    (selector.matchExpressions ?? []).length === 0
  );
}
