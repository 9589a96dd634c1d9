/**
 * Discovery as the unaggregated endpoints answer it: `/version`, `/api` (APIVersions), `/apis`
 * (APIGroupList, the agent-sandbox groups included), `/apis/<group>` (APIGroup) and `/api/v1`,
 * `/apis/<group>/<version>` (APIResourceList with subresources). Clients asking for the aggregated
 * format (`apidiscovery.k8s.io/v2`) get these plain documents and fall back to them, as with any server that
 * does not aggregate.
 */
import { groupVersion, RESOURCES, type ResourceDefinition } from "./kubernetes-resources.js";

/** The Kubernetes version the emulator reports (the one kubectl 1.32 expects to talk to). */
export const EMULATED_KUBERNETES_VERSION = {
  major: "1",
  minor: "32",
  gitVersion: "v1.32.0-sbox-emulator",
} as const;

const SUBRESOURCE_KINDS: Readonly<Record<string, { kind: string; group?: string; version?: string }>> = {
  "pods/exec": { kind: "PodExecOptions" },
  "pods/attach": { kind: "PodAttachOptions" },
  "pods/portforward": { kind: "PodPortForwardOptions" },
  "pods/log": { kind: "Pod" },
};

/** `/version`. */
export function versionInfo(): Record<string, string> {
  return {
    ...EMULATED_KUBERNETES_VERSION,
    gitCommit: "0000000000000000000000000000000000000000",
    gitTreeState: "clean",
    buildDate: "2026-01-01T00:00:00Z",
    goVersion: "go1.23.4",
    compiler: "gc",
    platform: `${process.platform}/${process.arch === "x64" ? "amd64" : process.arch}`,
  };
}

/** `/api`. */
export function coreVersions(serverAddress: string): Record<string, unknown> {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
  };
}

function groups(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const r of RESOURCES) {
    if (!r.group) continue;
    const versions = out.get(r.group) ?? [];
    if (!versions.includes(r.version)) versions.push(r.version);
    out.set(r.group, versions);
  }
  return out;
}

function groupDocument(name: string, versions: string[]): Record<string, unknown> {
  const list = versions.map((version) => ({ groupVersion: `${name}/${version}`, version }));
  return { name, versions: list, preferredVersion: list[0] };
}

/** `/apis`. */
export function groupList(): Record<string, unknown> {
  return {
    kind: "APIGroupList",
    apiVersion: "v1",
    groups: [...groups()].map(([name, versions]) => groupDocument(name, versions)),
  };
}

/** `/apis/<group>`, or `undefined` for a group that is not served. */
export function groupInfo(group: string): Record<string, unknown> | undefined {
  const versions = groups().get(group);
  if (!versions) return undefined;
  return { kind: "APIGroup", apiVersion: "v1", ...groupDocument(group, versions) };
}

function entry(r: ResourceDefinition): Record<string, unknown>[] {
  const main: Record<string, unknown> = {
    name: r.plural,
    singularName: r.singular,
    namespaced: r.namespaced,
    kind: r.kind,
    verbs: [...r.verbs],
  };
  if (r.shortNames.length > 0) main.shortNames = [...r.shortNames];
  if (r.categories) main.categories = [...r.categories];
  const subs = Object.entries(r.subresources).map(([name, verbs]) => {
    const full = `${r.plural}/${name}`;
    const special = SUBRESOURCE_KINDS[full];
    const sub: Record<string, unknown> = {
      name: full,
      singularName: "",
      namespaced: r.namespaced,
      kind: name === "scale" ? "Scale" : (special?.kind ?? r.kind),
      verbs: [...verbs],
    };
    if (name === "scale") {
      sub.group = "autoscaling";
      sub.version = "v1";
    }
    return sub;
  });
  return [main, ...subs];
}

/** `/api/v1` or `/apis/<group>/<version>`, or `undefined` when not served. */
export function resourceList(group: string, version: string): Record<string, unknown> | undefined {
  const served = RESOURCES.filter((r) => r.group === group && r.version === version);
  if (served.length === 0) return undefined;
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: groupVersion(served[0]!),
    resources: served.flatMap(entry),
  };
}
