/**
 * The options of `kubernetes()`, checked up front: an unknown option or a value of the wrong shape is a
 * `Validation` error when the provider is made, never ignored.
 */
import { kubernetesError } from "./kubernetes-errors.js";

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
  /** The kubeconfig context (default: its current context). */
  context?: string | undefined;
  /** Namespace of the sandboxes (default: the context's namespace, else `default`). */
  namespace?: string | undefined;
  /**
   * `pod` (default): a sandbox is a pod. `agent-sandbox`: a sandbox is a kubernetes-sigs/agent-sandbox
   * `Sandbox` (or a `SandboxClaim` on `warmPool`), and `stop()` suspends it.
   */
  mode?: "pod" | "agent-sandbox" | undefined;
  /** agent-sandbox mode: claim sandboxes from this SandboxWarmPool instead of creating Sandboxes. */
  warmPool?: string | undefined;
  /** Image when `spec.template` is not set (default `busybox:stable`). */
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
  /** Upper bound of every API call that is not a command's stream (default 30 000 ms). */
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

const KNOWN = new Set([
  "kubeconfig",
  "kubeconfigPath",
  "context",
  "namespace",
  "mode",
  "warmPool",
  "image",
  "runtimeClassName",
  "nodeSelector",
  "serviceAccountName",
  "activeDeadlineSeconds",
  "imagePullPolicy",
  "workdir",
  "labels",
  "ports",
  "createTimeoutMs",
  "requestTimeoutMs",
]);

const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** Whether a string is a valid label key. */
export function isLabelKey(key: string): boolean {
  return key.length <= 317 && LABEL_KEY.test(key);
}

/** Whether a string is a valid label value. */
export function isLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value);
}

function invalid(message: string) {
  return kubernetesError("Validation", `kubernetes(): ${message}`);
}

function optionalString(
  options: KubernetesProviderOptions,
  name: keyof KubernetesProviderOptions,
): string | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value === "") throw invalid(`${name} must be a non-empty string`);
  return value;
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0)
    throw invalid(`${name} must be a positive number, got ${String(value)}`);
  return value;
}

function labelMap(
  name: string,
  value: Readonly<Record<string, string>> | undefined,
): Readonly<Record<string, string>> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null) throw invalid(`${name} must be an object of strings`);
  for (const [k, v] of Object.entries(value)) {
    if (!isLabelKey(k) || typeof v !== "string" || !isLabelValue(v))
      throw invalid(`${name}: ${JSON.stringify(k)}=${JSON.stringify(v)} is not a valid Kubernetes label`);
  }
  return { ...value };
}

/** Checks the options and fills in defaults. */
export function resolveKubernetesOptions(options: KubernetesProviderOptions = {}): ResolvedKubernetesOptions {
  if (typeof options !== "object" || options === null) throw invalid("options must be an object");
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw invalid(`unknown option ${JSON.stringify(key)}`);
  }
  const mode = options.mode ?? "pod";
  if (mode !== "pod" && mode !== "agent-sandbox")
    throw invalid(`mode must be "pod" or "agent-sandbox", got ${JSON.stringify(mode)}`);
  const warmPool = optionalString(options, "warmPool");
  if (warmPool && mode !== "agent-sandbox") throw invalid('warmPool needs mode: "agent-sandbox"');
  if (options.kubeconfig !== undefined && options.kubeconfigPath !== undefined)
    throw invalid("give kubeconfig or kubeconfigPath, not both");
  const deadline = options.activeDeadlineSeconds;
  if (deadline !== undefined && !(Number.isInteger(deadline) && deadline > 0))
    throw invalid("activeDeadlineSeconds must be a positive integer");
  const pull = options.imagePullPolicy;
  if (pull !== undefined && !["Always", "IfNotPresent", "Never"].includes(pull))
    throw invalid(`imagePullPolicy must be Always, IfNotPresent or Never`);
  const ports = options.ports ?? "port-forward";
  if (
    ports !== "port-forward" &&
    !(
      typeof ports === "object" &&
      ports !== null &&
      (ports.service === "NodePort" || ports.service === "LoadBalancer")
    )
  ) {
    throw invalid('ports must be "port-forward" or { service: "NodePort" | "LoadBalancer" }');
  }
  const workdir = optionalString(options, "workdir");
  if (workdir !== undefined && !workdir.startsWith("/")) throw invalid("workdir must be an absolute path");
  return {
    kubeconfig: optionalString(options, "kubeconfig"),
    kubeconfigPath: optionalString(options, "kubeconfigPath"),
    context: optionalString(options, "context"),
    namespace: optionalString(options, "namespace"),
    mode,
    warmPool,
    image: optionalString(options, "image") ?? DEFAULT_IMAGE,
    runtimeClassName: optionalString(options, "runtimeClassName"),
    nodeSelector: labelMap("nodeSelector", options.nodeSelector),
    serviceAccountName: optionalString(options, "serviceAccountName"),
    activeDeadlineSeconds: deadline,
    imagePullPolicy: pull,
    workdir,
    labels: labelMap("labels", options.labels),
    ports,
    createTimeoutMs: positive("createTimeoutMs", options.createTimeoutMs, 300_000),
    requestTimeoutMs: positive("requestTimeoutMs", options.requestTimeoutMs, 30_000),
  };
}
