/**
 * Pod admission: the defaults the API server fills in (restart policy, grace period, pull policy, QoS
 * class, `Pending` status), the validation it does (containers with DNS-label names and an image), the
 * emulator's own limit (one container per pod, no init containers: each pod is one backend sandbox), and
 * the immutability of a pod's spec after create (only a container's image and `activeDeadlineSeconds` may
 * change, as on a real cluster).
 */
import { DNS_LABEL, type KubeObject } from "./kubernetes-objects.js";
import { invalid, KubeApiError } from "./kubernetes-status.js";

/** The parts of a container the emulator reads. */
export interface ContainerSpec {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: {
    name: string;
    value?: string;
    valueFrom?: Record<string, { name?: string; key?: string; fieldPath?: string; optional?: boolean }>;
  }[];
  envFrom?: {
    prefix?: string;
    secretRef?: { name: string; optional?: boolean };
    configMapRef?: { name: string; optional?: boolean };
  }[];
  resources?: { limits?: Record<string, string>; requests?: Record<string, string> };
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  imagePullPolicy?: string;
  securityContext?: { runAsUser?: number };
  ports?: { containerPort: number; name?: string; protocol?: string }[];
  [key: string]: unknown;
}

/** The parts of a pod spec the emulator reads. */
export interface PodSpec {
  containers: ContainerSpec[];
  initContainers?: unknown[];
  restartPolicy?: "Always" | "OnFailure" | "Never";
  activeDeadlineSeconds?: number;
  terminationGracePeriodSeconds?: number;
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  runtimeClassName?: string;
  securityContext?: { runAsUser?: number };
  [key: string]: unknown;
}

/** The spec of a pod object. */
export function podSpecOf(pod: KubeObject): PodSpec {
  return (pod.spec ?? { containers: [] }) as unknown as PodSpec;
}

function pullPolicy(image: string): string {
  const last = image.split("/").pop() ?? image;
  if (last.includes("@")) return "IfNotPresent";
  const tag = last.includes(":") ? last.slice(last.indexOf(":") + 1) : "latest";
  return tag === "latest" ? "Always" : "IfNotPresent";
}

function qosClass(containers: ContainerSpec[]): string {
  let any = false;
  let guaranteed = true;
  for (const c of containers) {
    const limits = c.resources?.limits ?? {};
    const requests = c.resources?.requests ?? {};
    if (Object.keys(limits).length > 0 || Object.keys(requests).length > 0) any = true;
    for (const r of ["cpu", "memory"]) {
      if (!limits[r] || (requests[r] && requests[r] !== limits[r])) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

/** Defaults and validates a new pod (throws 422 Invalid). */
export function admitPod(pod: KubeObject): void {
  const name = pod.metadata.name ?? "";
  const spec = (pod.spec ?? {}) as Partial<PodSpec>;
  const errors: { field: string; message: string; reason?: string }[] = [];
  const containers = Array.isArray(spec.containers) ? spec.containers : [];
  if (containers.length === 0) {
    errors.push({ field: "spec.containers", message: "Required value", reason: "FieldValueRequired" });
  } else if (containers.length > 1) {
    errors.push({
      field: "spec.containers",
      message: `Too many: ${containers.length}: must have at most 1 items (the sbox emulator runs each pod as one backend sandbox)`,
      reason: "FieldValueTooMany",
    });
  }
  if (Array.isArray(spec.initContainers) && spec.initContainers.length > 0) {
    errors.push({
      field: "spec.initContainers",
      message: "Forbidden: init containers are not emulated (each pod is one backend sandbox)",
      reason: "FieldValueForbidden",
    });
  }
  containers.forEach((c, i) => {
    if (!c || typeof c !== "object") return;
    if (typeof c.name !== "string" || c.name === "") {
      errors.push({
        field: `spec.containers[${i}].name`,
        message: "Required value",
        reason: "FieldValueRequired",
      });
    } else if (!DNS_LABEL.test(c.name) || c.name.length > 63) {
      errors.push({
        field: `spec.containers[${i}].name`,
        message: `Invalid value: "${c.name}": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character`,
      });
    }
    if (typeof c.image !== "string" || c.image.trim() === "") {
      errors.push({
        field: `spec.containers[${i}].image`,
        message: "Required value",
        reason: "FieldValueRequired",
      });
    }
    for (const key of ["command", "args"] as const) {
      const value = c[key];
      if (value !== undefined && (!Array.isArray(value) || !value.every((w) => typeof w === "string"))) {
        errors.push({
          field: `spec.containers[${i}].${key}`,
          message: "Invalid value: must be a list of strings",
        });
      }
    }
  });
  const policy = spec.restartPolicy ?? "Always";
  if (!["Always", "OnFailure", "Never"].includes(policy)) {
    errors.push({
      field: "spec.restartPolicy",
      message: `Unsupported value: "${policy}": supported values: "Always", "OnFailure", "Never"`,
      reason: "FieldValueNotSupported",
    });
  }
  const deadline = spec.activeDeadlineSeconds;
  if (deadline !== undefined && !(Number.isInteger(deadline) && deadline > 0)) {
    errors.push({ field: "spec.activeDeadlineSeconds", message: "Invalid value: must be greater than 0" });
  }
  if (errors.length > 0) throw invalid("Pod", "", name, errors);
  spec.restartPolicy = policy;
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= "ClusterFirst";
  spec.schedulerName ??= "default-scheduler";
  spec.serviceAccountName ??= "default";
  spec.securityContext ??= {};
  spec.enableServiceLinks ??= true;
  spec.priority ??= 0;
  for (const c of containers) {
    c.imagePullPolicy ??= pullPolicy(c.image);
    c.terminationMessagePath ??= "/dev/termination-log";
    c.terminationMessagePolicy ??= "File";
    c.resources ??= {};
  }
  pod.spec = spec as Record<string, unknown>;
  pod.status = {
    phase: "Pending",
    qosClass: qosClass(containers as ContainerSpec[]),
    conditions: [],
  };
}

/** Refuses changes to a pod's spec that a real API server refuses. */
export function admitPodUpdate(next: KubeObject, previous: KubeObject): void {
  const before = podSpecOf(previous);
  const after = structuredClone(podSpecOf(next));
  const allowed = structuredClone(before);
  if (after.activeDeadlineSeconds !== undefined) {
    const old = before.activeDeadlineSeconds;
    if (
      !(Number.isInteger(after.activeDeadlineSeconds) && after.activeDeadlineSeconds > 0) ||
      (old !== undefined && after.activeDeadlineSeconds > old)
    ) {
      throw invalid("Pod", "", previous.metadata.name ?? "", [
        {
          field: "spec.activeDeadlineSeconds",
          message: "Invalid value: must be a positive integer, and may only be decreased once set",
        },
      ]);
    }
    allowed.activeDeadlineSeconds = after.activeDeadlineSeconds;
  }
  after.containers?.forEach((c, i) => {
    if (allowed.containers[i] && typeof c.image === "string") allowed.containers[i]!.image = c.image;
  });
  if (JSON.stringify(allowed) !== JSON.stringify(after)) {
    throw new KubeApiError(
      422,
      "Invalid",
      `Pod "${previous.metadata.name}" is invalid: spec: Forbidden: pod updates may not change fields other than \`spec.containers[*].image\`, \`spec.initContainers[*].image\`, \`spec.activeDeadlineSeconds\`, \`spec.tolerations\` (only additions to existing tolerations) or \`spec.terminationGracePeriodSeconds\` (allow it to be set to 1 if it was previously negative)`,
      {
        name: previous.metadata.name,
        kind: "Pod",
        causes: [{ reason: "FieldValueForbidden", field: "spec" }],
      },
    );
  }
}

/** CPU quantity (`500m`, `2`) in cores. */
export function cpuCores(quantity: string | undefined): number | undefined {
  if (!quantity) return undefined;
  const m = /^(\d+(?:\.\d+)?)(m?)$/.exec(quantity.trim());
  if (!m) return undefined;
  return m[2] ? Number(m[1]) / 1000 : Number(m[1]);
}

const BINARY: Readonly<Record<string, number>> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };
const DECIMAL: Readonly<Record<string, number>> = { k: 1e3, K: 1e3, M: 1e6, G: 1e9, T: 1e12, "": 1 };

/** Memory quantity (`256Mi`, `1G`, `1048576`) in MiB. */
export function memoryMiB(quantity: string | undefined): number | undefined {
  if (!quantity) return undefined;
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|K|M|G|T)?$/.exec(quantity.trim());
  if (!m) return undefined;
  const unit = m[2] ?? "";
  const bytes = Number(m[1]) * (BINARY[unit] ?? DECIMAL[unit] ?? 1);
  return Math.max(1, Math.ceil(bytes / 2 ** 20));
}
