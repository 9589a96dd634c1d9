/**
 * Mode `pod`: a sandbox is one pod named after its id, labelled as sbox's. Create writes the egress policy
 * first when the spec restricts egress (so the first command is already confined), then the pod, and
 * waits until it runs (a pod that cannot start is deleted again and its reason reported). Destroy deletes
 * the pod with no grace period plus its network policy, and waits until the pod is gone. The expiry is an
 * annotation, enforced by `client.reap()` (a pod cannot be given more time once it has an active
 * deadline); stop and pause do not exist for pods.
 */
import type { V1Pod } from "@kubernetes/client-node";
import type { DriverSandboxInfo, ListFilter, SandboxSpec } from "@sbox/core/spec";
import type { KubernetesCluster } from "./kubernetes-cluster.js";
import { kubernetesError } from "./kubernetes-errors.js";
import type { PodTarget } from "./kubernetes-exec.js";
import { isOurs, listSelector, sandboxInfo, sandboxMetadata } from "./kubernetes-labels.js";
import { CONTAINER_NAME, EXPIRES_ANNOTATION } from "./kubernetes-names.js";
import { deleteEgress, setEgress } from "./kubernetes-network.js";
import { podSpecFor } from "./kubernetes-pod-manifest.js";
import { podState, waitForPod } from "./kubernetes-pod-status.js";
import type { SandboxObjects } from "./kubernetes-sandboxes.js";

/** How long destroy waits for a pod to be gone. */
const GONE_BOUND_MS = 60_000;

function status(error: unknown): number | undefined {
  const value = (error as { status?: unknown }).status;
  return typeof value === "number" ? value : undefined;
}

/** Waits until `read` answers 404 (bounded). */
export async function waitGone(
  read: () => Promise<unknown>,
  signal: AbortSignal,
  what: string,
): Promise<void> {
  const deadline = Date.now() + GONE_BOUND_MS;
  let delay = 25;
  for (;;) {
    try {
      await read();
    } catch (error) {
      if (status(error) === 404) return;
      throw error;
    }
    if (signal.aborted) return;
    if (Date.now() > deadline)
      throw kubernetesError(
        "Timeout",
        `kubernetes destroy: ${what} was still there after ${GONE_BOUND_MS} ms`,
        { retryable: true },
      );
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 500);
  }
}

/** Sandboxes as plain pods. */
export class PodSandboxes implements SandboxObjects {
  readonly kind = "Pod" as const;

  constructor(private readonly cluster: KubernetesCluster) {}

  private get options() {
    return this.cluster.options;
  }

  private readPod(name: string, signal: AbortSignal): Promise<V1Pod> {
    return this.cluster.call("read pod", signal, (apis, options) =>
      apis.core.readNamespacedPod({ name, namespace: apis.namespace }, options),
    );
  }

  private async ours(id: string, signal: AbortSignal): Promise<V1Pod> {
    let pod: V1Pod;
    try {
      pod = await this.readPod(id, signal);
    } catch (error) {
      if (status(error) === 404)
        throw kubernetesError("NotFound", `kubernetes: no sandbox ${id}`, { status: 404, cause: error });
      throw error;
    }
    if (!isOurs(pod.metadata, this.options.labels))
      throw kubernetesError("NotFound", `kubernetes: pod ${id} is not an sbox sandbox of this provider`);
    return pod;
  }

  async create(id: string, spec: SandboxSpec, signal: AbortSignal): Promise<void> {
    const meta = sandboxMetadata(id, spec, this.options.labels, Date.now());
    const egress = spec.network?.egress;
    if (egress !== undefined && egress !== "allow-all")
      await setEgress(this.cluster, id, egress, this.options.labels, signal);
    const body = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: id, labels: meta.labels, annotations: meta.annotations },
      spec: podSpecFor(spec, this.options),
    };
    try {
      await this.cluster.call("create pod", signal, (apis, options) =>
        apis.core.createNamespacedPod({ namespace: apis.namespace, body: body as never }, options),
      );
      await waitForPod(
        this.cluster,
        id,
        signal,
        this.options.createTimeoutMs,
        spec.template ?? this.options.image,
      );
    } catch (error) {
      await this.destroy(id, AbortSignal.timeout(30_000)).catch(() => undefined);
      throw error;
    }
  }

  async find(id: string, signal: AbortSignal): Promise<void> {
    await this.ours(id, signal);
  }

  async pod(id: string): Promise<PodTarget> {
    const apis = await this.cluster.apis();
    return { namespace: apis.namespace, pod: id, container: CONTAINER_NAME };
  }

  async info(id: string, signal: AbortSignal): Promise<DriverSandboxInfo> {
    const pod = await this.ours(id, signal);
    return sandboxInfo(id, pod.metadata, podState(pod), pod);
  }

  async *list(filter: ListFilter, signal: AbortSignal): AsyncIterable<DriverSandboxInfo> {
    const selector = listSelector(this.options.labels, filter);
    const pods = await this.cluster.call("list pods", signal, (apis, options) =>
      apis.core.listNamespacedPod({ namespace: apis.namespace, labelSelector: selector }, options),
    );
    for (const pod of pods.items) {
      if (!isOurs(pod.metadata, this.options.labels) || !pod.metadata?.name) continue;
      yield sandboxInfo(pod.metadata.name, pod.metadata, podState(pod), pod);
    }
  }

  async destroy(id: string, signal: AbortSignal): Promise<void> {
    try {
      await this.cluster.call("delete pod", signal, (apis, options) =>
        apis.core.deleteNamespacedPod(
          { name: id, namespace: apis.namespace, gracePeriodSeconds: 0 },
          options,
        ),
      );
    } catch (error) {
      if (status(error) !== 404) throw error;
    }
    await deleteEgress(this.cluster, id, signal);
    await waitGone(() => this.readPod(id, signal), signal, `pod ${id}`);
  }

  async setTimeout(id: string, ttlMs: number, signal: AbortSignal): Promise<void> {
    const pod = await this.ours(id, signal);
    const at = new Date(Date.now() + ttlMs);
    const deadline = this.options.activeDeadlineSeconds;
    const started = pod.status?.startTime ? new Date(pod.status.startTime).getTime() : undefined;
    if (deadline !== undefined && started !== undefined && at.getTime() > started + deadline * 1000) {
      throw kubernetesError(
        "Validation",
        `kubernetes setTimeout: the pod's activeDeadlineSeconds (${deadline}) ends it at ${new Date(started + deadline * 1000).toISOString()}, before the requested expiry`,
      );
    }
    const patch = [
      pod.metadata?.annotations
        ? {
            op: "add",
            path: `/metadata/annotations/${EXPIRES_ANNOTATION.replace("/", "~1")}`,
            value: at.toISOString(),
          }
        : { op: "add", path: "/metadata/annotations", value: { [EXPIRES_ANNOTATION]: at.toISOString() } },
    ];
    await this.cluster.call("patch pod", signal, (apis, options) =>
      apis.core.patchNamespacedPod({ name: id, namespace: apis.namespace, body: patch }, options),
    );
  }
}
