/**
 * Server-side printing: a `meta.k8s.io/v1 Table` for clients that ask for one (`kubectl get` sends
 * `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`). Pods get kubectl's columns (NAME, READY, STATUS,
 * RESTARTS, AGE, and IP/NODE for `-o wide`), with STATUS worked out as the API server's printer does
 * (waiting or terminated reasons, `Terminating`); services, namespaces, nodes, network policies and the
 * agent-sandbox kinds get theirs; anything else NAME and AGE.
 */
import type { KubeObject } from "./kubernetes-objects.js";
import type { ResourceDefinition } from "./kubernetes-resources.js";

interface Column {
  name: string;
  type: string;
  format?: string;
  description: string;
  priority: number;
  cell(object: KubeObject, now: number): unknown;
}

/** `5s`, `4m12s`, `3h`, `2d`: kubectl's human duration. */
export function humanAge(created: string | undefined, now: number): string {
  if (!created) return "<unknown>";
  const seconds = Math.max(0, Math.floor((now - Date.parse(created)) / 1000));
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return `${minutes}m${seconds % 60 ? `${seconds % 60}s` : ""}`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}

const nameColumn: Column = {
  name: "Name",
  type: "string",
  format: "name",
  description: "Name must be unique within a namespace.",
  priority: 0,
  cell: (o) => o.metadata.name,
};

const ageColumn: Column = {
  name: "Age",
  type: "string",
  description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
  priority: 0,
  cell: (o, now) => humanAge(o.metadata.creationTimestamp, now),
};

interface ContainerStatus {
  ready?: boolean;
  restartCount?: number;
  state?: {
    waiting?: { reason?: string };
    running?: unknown;
    terminated?: { reason?: string; exitCode?: number; signal?: number };
  };
}

/** The STATUS column of a pod. */
export function podStatusText(pod: KubeObject): string {
  const status = (pod.status ?? {}) as {
    phase?: string;
    reason?: string;
    containerStatuses?: ContainerStatus[];
  };
  let reason = status.reason ?? status.phase ?? "Unknown";
  for (const c of status.containerStatuses ?? []) {
    const waiting = c.state?.waiting?.reason;
    const terminated = c.state?.terminated;
    if (waiting) reason = waiting;
    else if (terminated) {
      reason =
        terminated.reason ??
        (terminated.signal ? `Signal:${terminated.signal}` : `ExitCode:${terminated.exitCode ?? 0}`);
    }
  }
  if (pod.metadata.deletionTimestamp) reason = "Terminating";
  return reason;
}

function podColumns(): Column[] {
  const statuses = (o: KubeObject) =>
    ((o.status ?? {}) as { containerStatuses?: ContainerStatus[] }).containerStatuses ?? [];
  const containers = (o: KubeObject) => ((o.spec ?? {}) as { containers?: unknown[] }).containers ?? [];
  return [
    nameColumn,
    {
      name: "Ready",
      type: "string",
      description: "The aggregate readiness state of this pod for accepting traffic.",
      priority: 0,
      cell: (o) => `${statuses(o).filter((c) => c.ready).length}/${containers(o).length}`,
    },
    {
      name: "Status",
      type: "string",
      description: "The aggregate status of the containers in this pod.",
      priority: 0,
      cell: (o) => podStatusText(o),
    },
    {
      name: "Restarts",
      type: "string",
      description:
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
      priority: 0,
      cell: (o) => String(statuses(o).reduce((n, c) => n + (c.restartCount ?? 0), 0)),
    },
    ageColumn,
    {
      name: "IP",
      type: "string",
      description:
        "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
      priority: 1,
      cell: (o) => ((o.status ?? {}) as { podIP?: string }).podIP ?? "<none>",
    },
    {
      name: "Node",
      type: "string",
      description: "NodeName is a request to schedule this pod onto a specific node.",
      priority: 1,
      cell: (o) => ((o.spec ?? {}) as { nodeName?: string }).nodeName ?? "<none>",
    },
    {
      name: "Nominated Node",
      type: "string",
      description: "nominatedNodeName is set only when this pod preempts other pods on the node.",
      priority: 1,
      cell: () => "<none>",
    },
    {
      name: "Readiness Gates",
      type: "string",
      description: "If specified, all readiness gates will be evaluated for pod readiness.",
      priority: 1,
      cell: () => "<none>",
    },
  ];
}

function field(path: string): (o: KubeObject) => unknown {
  return (o) => {
    let current: unknown = o;
    for (const part of path.split(".")) current = (current as Record<string, unknown> | undefined)?.[part];
    return current ?? "<none>";
  };
}

function condition(type: string, key: "status" | "reason"): (o: KubeObject) => unknown {
  return (o) => {
    const conditions = ((o.status ?? {}) as { conditions?: Record<string, string>[] }).conditions ?? [];
    return conditions.find((c) => c.type === type)?.[key] ?? "";
  };
}

function columnsFor(definition: ResourceDefinition): Column[] {
  const col = (name: string, cell: (o: KubeObject, now: number) => unknown, priority = 0): Column => ({
    name,
    type: "string",
    description: name,
    priority,
    cell,
  });
  switch (definition.kind) {
    case "Pod":
      return podColumns();
    case "Service":
      return [
        nameColumn,
        col("Type", field("spec.type")),
        col("Cluster-IP", field("spec.clusterIP")),
        col("External-IP", (o) => {
          const ingress = (
            (o.status as { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } } | undefined)
              ?.loadBalancer?.ingress ?? []
          ).map((i) => i.ip ?? i.hostname);
          return ingress.length > 0
            ? ingress.join(",")
            : (o.spec as { type?: string } | undefined)?.type === "LoadBalancer"
              ? "<pending>"
              : "<none>";
        }),
        col("Port(s)", (o) =>
          (
            ((o.spec ?? {}) as { ports?: { port: number; protocol?: string; nodePort?: number }[] }).ports ??
            []
          )
            .map((p) => `${p.port}${p.nodePort ? `:${p.nodePort}` : ""}/${p.protocol ?? "TCP"}`)
            .join(","),
        ),
        ageColumn,
      ];
    case "Namespace":
      return [nameColumn, col("Status", field("status.phase")), ageColumn];
    case "Node":
      return [
        nameColumn,
        col("Status", () => "Ready"),
        col("Roles", () => "control-plane"),
        ageColumn,
        col("Version", field("status.nodeInfo.kubeletVersion")),
      ];
    case "NetworkPolicy":
      return [
        nameColumn,
        col(
          "Pod-Selector",
          (o) =>
            Object.entries(
              (o.spec as { podSelector?: { matchLabels?: Record<string, string> } } | undefined)?.podSelector
                ?.matchLabels ?? {},
            )
              .map(([k, v]) => `${k}=${v}`)
              .join(",") || "<none>",
        ),
        ageColumn,
      ];
    case "Sandbox":
    case "SandboxClaim":
      return [
        nameColumn,
        col("Ready", condition("Ready", "status")),
        col("Reason", condition("Ready", "reason")),
        ageColumn,
      ];
    case "SandboxWarmPool":
      return [
        nameColumn,
        col("Ready", (o) => `${(o.status as { readyReplicas?: number } | undefined)?.readyReplicas ?? 0}`),
        ageColumn,
      ];
    default:
      return [nameColumn, ageColumn];
  }
}

/** Whether an Accept header asks for a Table. */
export function wantsTable(accept: string | undefined): boolean {
  return /as=Table/.test(accept ?? "");
}

/** The Table for `objects` (`includeObject`: `None`, `Metadata` (default) or `Object`). */
export function toTable(
  definition: ResourceDefinition,
  objects: readonly KubeObject[],
  now: number,
  resourceVersion: string,
  includeObject = "Metadata",
): Record<string, unknown> {
  const columns = columnsFor(definition);
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: { resourceVersion },
    columnDefinitions: columns.map(({ name, type, format, description, priority }) => ({
      name,
      type,
      format: format ?? "",
      description,
      priority,
    })),
    rows: objects.map((o) => ({
      cells: columns.map((c) => c.cell(o, now)),
      object:
        includeObject === "None"
          ? undefined
          : includeObject === "Object"
            ? o
            : { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: o.metadata },
    })),
  };
}
