/**
 * Reading a pod's status: the sandbox state it means, and the wait until it runs. The wait fails fast, with
 * the kubelet's own message, when the pod cannot start — an image that cannot be pulled (`ErrImagePull`,
 * `ImagePullBackOff`, `InvalidImageName`: `NotFound`), a container that cannot be created
 * (`CreateContainerConfigError`, `CreateContainerError`: `Validation`), a pod that ended — and otherwise
 * polls until `Running` and ready, up to the create timeout, reporting what it last saw.
 */
import type { V1Pod } from "@kubernetes/client-node";
import type { SandboxState } from "@sbox/core/spec";
import { abortedError, type KubernetesCluster } from "./kubernetes-cluster.js";
import { kubernetesError } from "./kubernetes-errors.js";

const IMAGE_FAILURES = new Set(["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"]);
const CONTAINER_FAILURES = new Set([
  "CreateContainerConfigError",
  "CreateContainerError",
  "RunContainerError",
  "StartError",
]);

interface Waiting {
  reason?: string | undefined;
  message?: string | undefined;
}

function waitingOf(pod: V1Pod): Waiting | undefined {
  return pod.status?.containerStatuses?.[0]?.state?.waiting;
}

function isReady(pod: V1Pod): boolean {
  return (
    pod.status?.phase === "Running" &&
    pod.status.conditions?.find((c) => c.type === "Ready")?.status === "True"
  );
}

/** The sandbox state of a pod. */
export function podState(pod: V1Pod): SandboxState {
  if (pod.metadata?.deletionTimestamp) return "destroyed";
  const phase = pod.status?.phase;
  const waiting = waitingOf(pod)?.reason;
  if (phase === "Pending")
    return waiting && (IMAGE_FAILURES.has(waiting) || CONTAINER_FAILURES.has(waiting)) ? "error" : "starting";
  if (phase === "Running") return isReady(pod) ? "running" : "starting";
  if (phase === "Succeeded") return "stopped";
  if (phase === "Failed") return "error";
  return "unknown";
}

/** A one-line account of where a pod is, for messages. */
export function podSummary(pod: V1Pod | undefined): string {
  if (!pod) return "no pod yet";
  const waiting = waitingOf(pod);
  const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
  const parts = [`phase ${pod.status?.phase ?? "unknown"}`];
  if (waiting?.reason) parts.push(`${waiting.reason}${waiting.message ? `: ${waiting.message}` : ""}`);
  if (scheduled?.status === "False")
    parts.push(`${scheduled.reason ?? "not scheduled"}${scheduled.message ? `: ${scheduled.message}` : ""}`);
  if (pod.status?.reason)
    parts.push(`${pod.status.reason}${pod.status.message ? `: ${pod.status.message}` : ""}`);
  return parts.join("; ");
}

/** The error of a pod that will not run, or `undefined` while it still may. */
export function podFailure(pod: V1Pod, image: string | undefined): Error | undefined {
  const waiting = waitingOf(pod);
  const name = pod.metadata?.name ?? "";
  if (waiting?.reason && IMAGE_FAILURES.has(waiting.reason)) {
    return kubernetesError(
      "NotFound",
      `kubernetes create: the image ${JSON.stringify(image ?? pod.spec?.containers?.[0]?.image ?? "")} of pod ${name} cannot be pulled (${waiting.reason}${waiting.message ? `: ${waiting.message}` : ""})`,
    );
  }
  if (waiting?.reason && CONTAINER_FAILURES.has(waiting.reason)) {
    return kubernetesError(
      "Validation",
      `kubernetes create: the container of pod ${name} cannot start (${waiting.reason}${waiting.message ? `: ${waiting.message}` : ""})`,
    );
  }
  const phase = pod.status?.phase;
  if (phase === "Succeeded" || phase === "Failed") {
    return kubernetesError(
      "Provider",
      `kubernetes create: pod ${name} ended before it could run commands (${podSummary(pod)})`,
    );
  }
  return undefined;
}

/** Polls the pod until it runs, fails, or `timeoutMs` passes. */
export async function waitForPod(
  cluster: KubernetesCluster,
  name: string,
  signal: AbortSignal,
  timeoutMs: number,
  image?: string | undefined,
): Promise<V1Pod> {
  const deadline = Date.now() + timeoutMs;
  let delay = 50;
  let last: V1Pod | undefined;
  for (;;) {
    if (signal.aborted) throw abortedError("create", signal);
    try {
      last = await cluster.call("read pod", signal, (apis, options) =>
        apis.core.readNamespacedPod({ name, namespace: apis.namespace }, options),
      );
    } catch (error) {
      if ((error as { status?: unknown }).status === 404) {
        throw kubernetesError(
          "Provider",
          `kubernetes create: pod ${name} disappeared while it was starting`,
          { cause: error },
        );
      }
      throw error;
    }
    if (isReady(last) && !last.metadata?.deletionTimestamp) return last;
    if (last.metadata?.deletionTimestamp)
      throw kubernetesError("Provider", `kubernetes create: pod ${name} is being deleted`);
    const failure = podFailure(last, image);
    if (failure) throw failure;
    if (Date.now() >= deadline) {
      throw kubernetesError(
        "Timeout",
        `kubernetes create: pod ${name} did not run within ${timeoutMs} ms (${podSummary(last)})`,
        { retryable: true },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(delay, Math.max(0, deadline - Date.now()))));
    delay = Math.min(delay * 2, 1_000);
  }
}
