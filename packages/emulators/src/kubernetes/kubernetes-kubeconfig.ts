/**
 * The kubeconfig of an emulator run: one cluster (the HTTPS URL, its self-signed CA inline), one user (a
 * bearer token), one context and namespace, written as YAML that kubectl and `KubeConfig.loadFromString`
 * read.
 */

/** What goes into the kubeconfig. */
export interface KubeconfigInput {
  readonly server: string;
  readonly caPem: string;
  readonly token: string;
  readonly namespace: string;
  /** Name of the cluster, user and context (default `sbox-emulator`). */
  readonly name?: string | undefined;
}

function quoted(value: string): string {
  return JSON.stringify(value);
}

/** The kubeconfig YAML. */
export function kubeconfigYaml(input: KubeconfigInput): string {
  const name = input.name ?? "sbox-emulator";
  const ca = Buffer.from(input.caPem, "utf8").toString("base64");
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    `- name: ${quoted(name)}`,
    "  cluster:",
    `    server: ${quoted(input.server)}`,
    `    certificate-authority-data: ${ca}`,
    "users:",
    `- name: ${quoted(name)}`,
    "  user:",
    `    token: ${quoted(input.token)}`,
    "contexts:",
    `- name: ${quoted(name)}`,
    "  context:",
    `    cluster: ${quoted(name)}`,
    `    user: ${quoted(name)}`,
    `    namespace: ${quoted(input.namespace)}`,
    `current-context: ${quoted(name)}`,
    "preferences: {}",
    "",
  ].join("\n");
}
