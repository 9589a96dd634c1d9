/**
 * The options of `kubernetes()`, checked up front by the core's option rules: an unknown option or a value
 * of the wrong shape is a `Validation` error when the provider is made, never ignored. Each setting is the
 * explicit option, else its environment variable (`SBOX_KUBERNETES_*`), else the default; the kubeconfig
 * itself comes from `KUBECONFIG` the way kubectl reads it (client-node's `loadFromDefault`).
 */
import {
  loadSetting,
  optionRules,
  type ProviderOptionRules,
  SandboxError,
  type SettingParser,
  settingParsers,
  validateProviderOptions,
} from "@sbox/core/spec";
import { PROVIDER_NAME } from "./kubernetes-names.js";

/** How `ports.expose` reaches a port: a local port-forward (default), or a Service of this type. */
export type KubernetesPortMode =
  | "port-forward"
  | {
      /** `NodePort` (the URL is `http://<nodeHost>:<nodePort>`) or `LoadBalancer` (its ingress address). */
      readonly service: "NodePort" | "LoadBalancer";
      /** Host in NodePort URLs (default: the API server's host). */
      readonly nodeHost?: string | undefined;
    };

/** Options of {@link kubernetes}. */
export interface KubernetesProviderOptions {
  /** A kubeconfig's text (YAML or JSON). Default: `KUBECONFIG`, `~/.kube/config`, or the in-cluster service account. */
  kubeconfig?: string | undefined;
  /** A kubeconfig file to read instead. */
  kubeconfigPath?: string | undefined;
  /** The kubeconfig context (default: `SBOX_KUBERNETES_CONTEXT`, else the kubeconfig's current context). */
  context?: string | undefined;
  /** Namespace of the sandboxes (default: `SBOX_KUBERNETES_NAMESPACE`, else the context's namespace, else `default`). */
  namespace?: string | undefined;
  /**
   * `pod` (default): a sandbox is a pod. `agent-sandbox`: a sandbox is a kubernetes-sigs/agent-sandbox
   * `Sandbox` (or a `SandboxClaim` on `warmPool`), and `stop()` suspends it.
   */
  mode?: "pod" | "agent-sandbox" | undefined;
  /** agent-sandbox mode: claim sandboxes from this SandboxWarmPool instead of creating Sandboxes. */
  warmPool?: string | undefined;
  /** Image when `spec.template` is not set (default: `SBOX_KUBERNETES_IMAGE`, else `busybox:stable`). */
  image?: string | undefined;
  /** `runtimeClassName` of every sandbox pod (gVisor, Kata...). */
  runtimeClassName?: string | undefined;
  /** `nodeSelector` of every sandbox pod. */
  nodeSelector?: Readonly<Record<string, string>> | undefined;
  /** `serviceAccountName` of the pods (default: the namespace's `default`; its token is not mounted). */
  serviceAccountName?: string | undefined;
  /** A hard deadline of every pod in seconds (`activeDeadlineSeconds`, enforced by the kubelet). */
  activeDeadlineSeconds?: number | undefined;
  /** `imagePullPolicy` of the container (default: Kubernetes' own default for the image's tag). */
  imagePullPolicy?: "Always" | "IfNotPresent" | "Never" | undefined;
  /** Working directory of the container (default: the image's). */
  workdir?: string | undefined;
  /** Extra labels on every object; `list` and `connect` see only sandboxes that carry them. */
  labels?: Readonly<Record<string, string>> | undefined;
  /** How exposed ports are reached (default `"port-forward"`). */
  ports?: KubernetesPortMode | undefined;
  /** How long `create` and `resume` wait for the pod to run (default 300 000 ms). */
  createTimeoutMs?: number | undefined;
  /**
   * Deadline of one call of the API server in ms (default 30 000): its answer must begin within it (a
   * WebSocket: its handshake). A command's stream runs as long as the command; while it is silent, the pod
   * is checked with this deadline. Past it: a retryable `Timeout`.
   */
  requestTimeoutMs?: number | undefined;
}

/** Options after defaults. */
export interface ResolvedKubernetesOptions {
  readonly kubeconfig: string | undefined;
  readonly kubeconfigPath: string | undefined;
  readonly context: string | undefined;
  readonly namespace: string | undefined;
  readonly mode: "pod" | "agent-sandbox";
  readonly warmPool: string | undefined;
  readonly image: string;
  readonly runtimeClassName: string | undefined;
  readonly nodeSelector: Readonly<Record<string, string>>;
  readonly serviceAccountName: string | undefined;
  readonly activeDeadlineSeconds: number | undefined;
  readonly imagePullPolicy: "Always" | "IfNotPresent" | "Never" | undefined;
  readonly workdir: string | undefined;
  readonly labels: Readonly<Record<string, string>>;
  readonly ports: KubernetesPortMode;
  readonly createTimeoutMs: number;
  readonly requestTimeoutMs: number;
}

/** The default image. */
export const DEFAULT_IMAGE = "busybox:stable";

const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
/** An RFC 1123 label: what namespaces are named with. */
const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Whether a string is a valid label key. */
export function isLabelKey(key: string): boolean {
  return key.length <= 317 && LABEL_KEY.test(key);
}

/** Whether a string is a valid label value. */
export function isLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value);
}

/** A map of labels (`nodeSelector`, `labels`): every key and value valid as a Kubernetes label. */
const labelMapRule = optionRules.custom("an object of Kubernetes labels", (value) => {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return "must be an object of Kubernetes labels";
  for (const [k, v] of Object.entries(value)) {
    if (!isLabelKey(k) || typeof v !== "string" || !isLabelValue(v))
      return `has ${JSON.stringify(k)}=${JSON.stringify(v)}, which is not a valid Kubernetes label`;
  }
  return undefined;
});

const portsRule = optionRules.custom(
  '"port-forward" or { service: "NodePort" | "LoadBalancer" }',
  (value) => {
    if (value === "port-forward") return undefined;
    if (typeof value !== "object" || value === null || Array.isArray(value))
      return 'must be "port-forward" or { service: "NodePort" | "LoadBalancer", nodeHost? }';
    const { service, nodeHost, ...rest } = value as Record<string, unknown>;
    if (service !== "NodePort" && service !== "LoadBalancer")
      return `service must be "NodePort" or "LoadBalancer", got ${JSON.stringify(service)}`;
    if (nodeHost !== undefined && (typeof nodeHost !== "string" || nodeHost === ""))
      return "nodeHost must be a non-empty string";
    const unknown = Object.keys(rest)[0];
    return unknown === undefined
      ? undefined
      : `has unknown key ${JSON.stringify(unknown)} (service, nodeHost)`;
  },
);

/** Every option of {@link kubernetes} and what it takes: anything else is refused, not ignored. */
const KUBERNETES_OPTION_RULES: ProviderOptionRules = {
  // A kubeconfig's text holds the user's token or client key: never quoted in a message.
  kubeconfig: optionRules.secret(),
  kubeconfigPath: optionRules.nonEmptyString(),
  context: optionRules.nonEmptyString(),
  namespace: optionRules.nonEmptyString(),
  mode: optionRules.oneOf(["pod", "agent-sandbox"]),
  warmPool: optionRules.nonEmptyString(),
  image: optionRules.nonEmptyString(),
  runtimeClassName: optionRules.nonEmptyString(),
  nodeSelector: labelMapRule,
  serviceAccountName: optionRules.nonEmptyString(),
  activeDeadlineSeconds: optionRules.positiveInteger("a positive whole number of seconds"),
  imagePullPolicy: optionRules.oneOf(["Always", "IfNotPresent", "Never"]),
  workdir: optionRules.custom("an absolute path", (value) =>
    typeof value === "string" && value.startsWith("/") && !value.includes("\0")
      ? undefined
      : `must be an absolute path, got ${JSON.stringify(value)}`,
  ),
  labels: labelMapRule,
  ports: portsRule,
  createTimeoutMs: optionRules.positiveNumber("a positive number of milliseconds"),
  requestTimeoutMs: optionRules.positiveNumber("a positive number of milliseconds"),
};

const namespaceName: SettingParser<string> = settingParsers.matching(
  NAMESPACE_NAME,
  "be a namespace name (lowercase letters, digits and dashes, at most 63)",
);

function invalid(message: string): SandboxError {
  return new SandboxError("Validation", `${PROVIDER_NAME}(): ${message}`, {
    provider: PROVIDER_NAME,
    retryable: false,
  });
}

/** Checks the options and fills in defaults (option, else environment variable, else default). */
export function resolveKubernetesOptions(options: KubernetesProviderOptions = {}): ResolvedKubernetesOptions {
  validateProviderOptions(PROVIDER_NAME, options, KUBERNETES_OPTION_RULES);
  const mode = options.mode ?? "pod";
  if (options.warmPool !== undefined && mode !== "agent-sandbox")
    throw invalid('warmPool needs mode: "agent-sandbox"');
  if (options.kubeconfig !== undefined && options.kubeconfigPath !== undefined)
    throw invalid("give kubeconfig or kubeconfigPath, not both");
  const { positiveNumber } = settingParsers;
  return {
    kubeconfig: options.kubeconfig,
    kubeconfigPath: options.kubeconfigPath,
    context: loadSetting(PROVIDER_NAME, {
      option: "context",
      value: options.context,
      env: "SBOX_KUBERNETES_CONTEXT",
      parse: settingParsers.string,
    }),
    namespace: loadSetting(PROVIDER_NAME, {
      option: "namespace",
      value: options.namespace,
      env: "SBOX_KUBERNETES_NAMESPACE",
      parse: namespaceName,
    }),
    mode,
    warmPool: options.warmPool,
    image: loadSetting(
      PROVIDER_NAME,
      { option: "image", value: options.image, env: "SBOX_KUBERNETES_IMAGE", parse: settingParsers.string },
      DEFAULT_IMAGE,
    ),
    runtimeClassName: options.runtimeClassName,
    nodeSelector: { ...(options.nodeSelector ?? {}) },
    serviceAccountName: options.serviceAccountName,
    activeDeadlineSeconds: options.activeDeadlineSeconds,
    imagePullPolicy: options.imagePullPolicy,
    workdir: options.workdir,
    labels: { ...(options.labels ?? {}) },
    ports: options.ports ?? "port-forward",
    createTimeoutMs: loadSetting(
      PROVIDER_NAME,
      { option: "createTimeoutMs", value: options.createTimeoutMs, parse: positiveNumber },
      300_000,
    ),
    requestTimeoutMs: loadSetting(
      PROVIDER_NAME,
      { option: "requestTimeoutMs", value: options.requestTimeoutMs, parse: positiveNumber },
      30_000,
    ),
  };
}
