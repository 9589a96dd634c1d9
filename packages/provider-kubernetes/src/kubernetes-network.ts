/**
 * Egress control with a NetworkPolicy per sandbox (`<id>-egress`, selecting the sandbox's pod by its
 * `sbox.dev/sandbox` label): `block-all` is a policy of type Egress without rules, an allow-list is one
 * rule whose peers are the listed addresses as ipBlocks (a NetworkPolicy cannot name hosts, so host names
 * are refused with `Validation`), `allow-all` deletes the policy. The policy is replaced in one call, so a
 * refused change (a cluster or admission policy that rejects it) leaves the previous one in force. It
 * takes effect only where the cluster's network plugin enforces NetworkPolicies (Calico, Cilium...; the
 * sbox emulator does).
 */
import { isIP } from "node:net";
import type { EgressPolicy } from "@sbox/core/spec";
import type { KubernetesCluster } from "./kubernetes-cluster.js";
import { kubernetesError } from "./kubernetes-errors.js";
import {
  egressPolicyName,
  MANAGED_LABEL,
  PROVIDER_LABEL,
  PROVIDER_NAME,
  SANDBOX_LABEL,
} from "./kubernetes-names.js";

function cidrOf(entry: string): string {
  const [address = "", bits] = entry.split("/");
  const family = isIP(address);
  if (family === 0) {
    throw kubernetesError(
      "Validation",
      `egress allow-list entry ${JSON.stringify(entry)}: a NetworkPolicy can only allow IP addresses and CIDRs, not host names`,
    );
  }
  if (bits === undefined) return `${address}/${family === 4 ? 32 : 128}`;
  const n = Number(bits);
  if (!Number.isInteger(n) || n < 0 || n > (family === 4 ? 32 : 128))
    throw kubernetesError("Validation", `invalid CIDR ${JSON.stringify(entry)}`);
  return `${address}/${n}`;
}

/** The NetworkPolicy for `policy`, or `undefined` for allow-all. */
export function egressPolicyManifest(
  sandbox: string,
  policy: EgressPolicy,
  labels: Readonly<Record<string, string>>,
): Record<string, unknown> | undefined {
  if (policy === "allow-all") return undefined;
  let egress: unknown[];
  if (policy === "block-all") egress = [];
  else {
    if (!Array.isArray(policy.allow))
      throw kubernetesError("Validation", "an egress allow-list needs an allow array");
    const cidrs = [...new Set(policy.allow.map(cidrOf))];
    egress = cidrs.length === 0 ? [] : [{ to: cidrs.map((cidr) => ({ ipBlock: { cidr } })) }];
  }
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: {
      name: egressPolicyName(sandbox),
      labels: {
        ...labels,
        [MANAGED_LABEL]: "true",
        [PROVIDER_LABEL]: PROVIDER_NAME,
        [SANDBOX_LABEL]: sandbox,
      },
    },
    spec: { podSelector: { matchLabels: { [SANDBOX_LABEL]: sandbox } }, policyTypes: ["Egress"], egress },
  };
}

function isStatus(error: unknown, status: number): boolean {
  return (error as { status?: unknown }).status === status;
}

/** Applies `policy` to the sandbox's pod. */
export async function setEgress(
  cluster: KubernetesCluster,
  sandbox: string,
  policy: EgressPolicy,
  labels: Readonly<Record<string, string>>,
  signal: AbortSignal,
): Promise<void> {
  const manifest = egressPolicyManifest(sandbox, policy, labels);
  const name = egressPolicyName(sandbox);
  if (!manifest) {
    await deleteEgress(cluster, sandbox, signal);
    return;
  }
  const existing = await cluster
    .call("read networkpolicy", signal, (apis, options) =>
      apis.networking.readNamespacedNetworkPolicy({ name, namespace: apis.namespace }, options),
    )
    .catch((error: unknown) => {
      if (isStatus(error, 404)) return undefined;
      throw error;
    });
  if (existing) {
    const next = {
      ...manifest,
      metadata: { ...(manifest.metadata as object), resourceVersion: existing.metadata?.resourceVersion },
    };
    await cluster.call("replace networkpolicy", signal, (apis, options) =>
      apis.networking.replaceNamespacedNetworkPolicy(
        { name, namespace: apis.namespace, body: next as never },
        options,
      ),
    );
    return;
  }
  await cluster.call("create networkpolicy", signal, (apis, options) =>
    apis.networking.createNamespacedNetworkPolicy(
      { namespace: apis.namespace, body: manifest as never },
      options,
    ),
  );
}

/** Removes the sandbox's egress policy (idempotent). */
export async function deleteEgress(
  cluster: KubernetesCluster,
  sandbox: string,
  signal: AbortSignal,
): Promise<void> {
  await cluster
    .call("delete networkpolicy", signal, (apis, options) =>
      apis.networking.deleteNamespacedNetworkPolicy(
        { name: egressPolicyName(sandbox), namespace: apis.namespace },
        options,
      ),
    )
    .catch((error: unknown) => {
      if (!isStatus(error, 404)) throw error;
    });
}
