/**
 * The resource types the emulated API server serves, as discovery describes them: core `v1` (pods with
 * their exec/attach/portforward/log/status subresources, services, namespaces, nodes, events, secrets,
 * configmaps), `networking.k8s.io/v1` network policies, and kubernetes-sigs/agent-sandbox's
 * `agents.x-k8s.io/v1beta1` Sandbox plus `extensions.agents.x-k8s.io/v1beta1` SandboxTemplate,
 * SandboxWarmPool and SandboxClaim (names, short names and scope as in its CRDs).
 */

/** One resource type. */
export interface ResourceDefinition {
  /** API group, `""` for core. */
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly singular: string;
  readonly kind: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  readonly verbs: readonly string[];
  /** Subresources and the verbs each allows. */
  readonly subresources: Readonly<Record<string, readonly string[]>>;
  readonly categories?: readonly string[] | undefined;
}

const ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

function core(plural: string, kind: string, extra: Partial<ResourceDefinition> = {}): ResourceDefinition {
  return {
    group: "",
    version: "v1",
    plural,
    singular: kind.toLowerCase(),
    kind,
    namespaced: true,
    shortNames: [],
    verbs: ALL_VERBS,
    subresources: {},
    ...extra,
  };
}

/** The agent-sandbox core group. */
export const AGENTS_GROUP = "agents.x-k8s.io";
/** The agent-sandbox extensions group. */
export const AGENTS_EXTENSIONS_GROUP = "extensions.agents.x-k8s.io";
/** The version both agent-sandbox groups are served at. */
export const AGENTS_VERSION = "v1beta1";

/** Every served resource type. */
export const RESOURCES: readonly ResourceDefinition[] = [
  core("pods", "Pod", {
    shortNames: ["po"],
    categories: ["all"],
    subresources: {
      status: ["get", "patch", "update"],
      exec: ["create", "get"],
      attach: ["create", "get"],
      portforward: ["create", "get"],
      log: ["get"],
    },
  }),
  core("services", "Service", {
    shortNames: ["svc"],
    categories: ["all"],
    subresources: { status: ["get", "patch", "update"] },
  }),
  core("namespaces", "Namespace", {
    namespaced: false,
    shortNames: ["ns"],
    verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
    subresources: { status: ["get", "patch", "update"] },
  }),
  core("nodes", "Node", { namespaced: false, shortNames: ["no"], verbs: ["get", "list", "watch"] }),
  core("events", "Event", { shortNames: ["ev"] }),
  core("secrets", "Secret"),
  core("configmaps", "ConfigMap", { shortNames: ["cm"] }),
  core("serviceaccounts", "ServiceAccount", { shortNames: ["sa"] }),
  {
    group: "networking.k8s.io",
    version: "v1",
    plural: "networkpolicies",
    singular: "networkpolicy",
    kind: "NetworkPolicy",
    namespaced: true,
    shortNames: ["netpol"],
    verbs: ALL_VERBS,
    subresources: {},
  },
  {
    group: AGENTS_GROUP,
    version: AGENTS_VERSION,
    plural: "sandboxes",
    singular: "sandbox",
    kind: "Sandbox",
    namespaced: true,
    shortNames: ["sandbox"],
    verbs: ALL_VERBS,
    subresources: { status: ["get", "patch", "update"] },
  },
  {
    group: AGENTS_EXTENSIONS_GROUP,
    version: AGENTS_VERSION,
    plural: "sandboxtemplates",
    singular: "sandboxtemplate",
    kind: "SandboxTemplate",
    namespaced: true,
    shortNames: ["sandboxtemplate"],
    verbs: ALL_VERBS,
    subresources: {},
  },
  {
    group: AGENTS_EXTENSIONS_GROUP,
    version: AGENTS_VERSION,
    plural: "sandboxwarmpools",
    singular: "sandboxwarmpool",
    kind: "SandboxWarmPool",
    namespaced: true,
    shortNames: ["swp"],
    verbs: ALL_VERBS,
    subresources: { status: ["get", "patch", "update"], scale: ["get", "patch", "update"] },
  },
  {
    group: AGENTS_EXTENSIONS_GROUP,
    version: AGENTS_VERSION,
    plural: "sandboxclaims",
    singular: "sandboxclaim",
    kind: "SandboxClaim",
    namespaced: true,
    shortNames: ["sandboxclaim"],
    verbs: ALL_VERBS,
    subresources: { status: ["get", "patch", "update"] },
  },
];

/** `group/version`, or `version` for core. */
export function groupVersion(definition: ResourceDefinition): string {
  return definition.group ? `${definition.group}/${definition.version}` : definition.version;
}

/** The definition of `plural` in `group` (`""` for core). */
export function findResource(group: string, version: string, plural: string): ResourceDefinition | undefined {
  return RESOURCES.find((r) => r.group === group && r.version === version && r.plural === plural);
}

/** The definition for an object's `apiVersion` and `kind`. */
export function resourceForKind(apiVersion: string, kind: string): ResourceDefinition | undefined {
  return RESOURCES.find((r) => groupVersion(r) === apiVersion && r.kind === kind);
}

/** The core pod resource. */
export const POD: ResourceDefinition = RESOURCES[0]!;
/** Services. */
export const SERVICE: ResourceDefinition = RESOURCES[1]!;
/** Namespaces. */
export const NAMESPACE: ResourceDefinition = RESOURCES[2]!;
/** Nodes. */
export const NODE: ResourceDefinition = RESOURCES[3]!;
/** Events. */
export const EVENT: ResourceDefinition = RESOURCES[4]!;
/** Secrets. */
export const SECRET: ResourceDefinition = RESOURCES[5]!;
/** ConfigMaps. */
export const CONFIG_MAP: ResourceDefinition = RESOURCES[6]!;
/** Network policies. */
export const NETWORK_POLICY: ResourceDefinition = RESOURCES[8]!;
/** agent-sandbox Sandboxes. */
export const SANDBOX: ResourceDefinition = RESOURCES[9]!;
/** agent-sandbox SandboxTemplates. */
export const SANDBOX_TEMPLATE: ResourceDefinition = RESOURCES[10]!;
/** agent-sandbox SandboxWarmPools. */
export const SANDBOX_WARM_POOL: ResourceDefinition = RESOURCES[11]!;
/** agent-sandbox SandboxClaims. */
export const SANDBOX_CLAIM: ResourceDefinition = RESOURCES[12]!;
