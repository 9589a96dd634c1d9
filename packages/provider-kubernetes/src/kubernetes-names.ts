/**
 * Names the provider writes on the cluster: the labels that mark sandboxes as sbox's (so `list`, `connect`
 * and `reap` see exactly ours), the annotations that keep what labels cannot hold (any metadata value,
 * the expiry), and the name of the container and the network policy of a sandbox.
 */

/** The provider name (id prefix `kubernetes:`). */
export const PROVIDER_NAME = "kubernetes";

/** On every object the provider creates. */
export const MANAGED_LABEL = "sbox.dev/managed";
/** The provider that made it. */
export const PROVIDER_LABEL = "sbox.dev/provider";
/** The sandbox an object belongs to (pods, network policies, services). */
export const SANDBOX_LABEL = "sbox.dev/sandbox";
/** Prefix of the label copies of metadata entries whose key and value a label can hold (server-side filtering). */
export const METADATA_LABEL_PREFIX = "meta.sbox.dev/";
/** All metadata, as JSON (labels cannot hold arbitrary values). */
export const METADATA_ANNOTATION = "sbox.dev/metadata";
/** The spec's `name`. */
export const NAME_ANNOTATION = "sbox.dev/name";
/** When the sandbox expires (ISO 8601), enforced by `client.reap()` in pod mode. */
export const EXPIRES_ANNOTATION = "sbox.dev/expires-at";
/** The container every sandbox pod runs. */
export const CONTAINER_NAME = "sandbox";
/** The environment variable that tags every process an exec starts, so its whole tree can be killed. */
export const EXEC_MARKER_VARIABLE = "SBOX_K8S_EXEC_ID";

/** The network policy that carries a sandbox's egress rules. */
export function egressPolicyName(sandbox: string): string {
  return `${sandbox}-egress`.slice(0, 253);
}
