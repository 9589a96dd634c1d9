/**
 * Mode `agent-sandbox`: a sandbox is a kubernetes-sigs/agent-sandbox `agents.x-k8s.io/v1beta1 Sandbox`
 * whose `podTemplate` is the pod mode's pod, or — with the `warmPool` option — an
 * `extensions.agents.x-k8s.io/v1beta1 SandboxClaim` on that `SandboxWarmPool` (a warm, already running
 * sandbox is adopted; env in the spec makes the controller start a fresh one, as its template allows).
 * The sandbox's controller keeps the pod: create waits for the `Ready` condition (failing fast on the pod's
 * image or container errors), `stop()` sets `operatingMode: Suspended` (the pod goes, the Sandbox stays;
 * the root filesystem is not kept) and `resume()` sets `Running` again, the ttl is `shutdownTime` with
 * `shutdownPolicy: Delete` (enforced by the controller), and destroy deletes the object, whose pod the
 * garbage collector removes.
 */
import type { V1Pod } from "@kubernetes/client-node";
import type { DriverSandboxInfo, ListFilter, SandboxSpec, SandboxState } from "@sbox/core/spec";
import { abortedError, type KubernetesCluster } from "./kubernetes-cluster.js";
import { kubernetesError } from "./kubernetes-errors.js";
import type { PodTarget } from "./kubernetes-exec.js";
import {
  isOurs,
  listSelector,
  type ObjectMetadata,
  sandboxInfo,
  sandboxMetadata,
} from "./kubernetes-labels.js";
import { CONTAINER_NAME, SANDBOX_LABEL } from "./kubernetes-names.js";
import { deleteEgress, setEgress } from "./kubernetes-network.js";
import { podSpecFor } from "./kubernetes-pod-manifest.js";
import { podFailure, podSummary } from "./kubernetes-pod-status.js";
import { waitGone } from "./kubernetes-pods.js";
import type { SandboxObjects } from "./kubernetes-sandboxes.js";

const GROUP = "agents.x-k8s.io";
const EXTENSIONS_GROUP = "extensions.agents.x-k8s.io";
const VERSION = "v1beta1";
const POD_NAME_ANNOTATION = "agents.x-k8s.io/pod-name";

interface Condition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
}

interface AgentObject {
  metadata?: ObjectMetadata & { resourceVersion?: string };
  spec?: { operatingMode?: string; shutdownTime?: string; lifecycle?: { shutdownTime?: string } };
  status?: { conditions?: Condition[]; sandbox?: { name?: string }; podIPs?: string[] };
}

function condition(object: AgentObject | undefined, type: string): Condition | undefined {
  return object?.status?.conditions?.find((c) => c.type === type);
}

function status(error: unknown): number | undefined {
  const value = (error as { status?: unknown }).status;
  return typeof value === "number" ? value : undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The sandbox state of a Sandbox object. */
function sandboxState(sandbox: AgentObject): SandboxState {
  if (sandbox.metadata?.deletionTimestamp) return "destroyed";
  const ready = condition(sandbox, "Ready");
  if (sandbox.spec?.operatingMode === "Suspended")
    return condition(sandbox, "Suspended")?.status === "True" ? "stopped" : "starting";
  if (ready?.status === "True") return "running";
  if (ready?.reason === "SandboxExpired") return "stopped";
  if (ready?.reason === "PodFailed" || ready?.reason === "ReconcilerError") return "error";
  if (ready?.reason === "PodSucceeded") return "stopped";
  return "starting";
}

/** Sandboxes as agent-sandbox objects. */
export class AgentSandboxes implements SandboxObjects {
  readonly kind: "Sandbox" | "SandboxClaim";
  private readonly pods = new Map<string, PodTarget>();

  constructor(private readonly cluster: KubernetesCluster) {
    this.kind = cluster.options.warmPool ? "SandboxClaim" : "Sandbox";
  }

  private get claims(): boolean {
    return this.kind === "SandboxClaim";
  }

  private async read(
    kind: "Sandbox" | "SandboxClaim",
    name: string,
    signal: AbortSignal,
  ): Promise<AgentObject> {
    const claim = kind === "SandboxClaim";
    return (await this.cluster.call(`read ${kind}`, signal, (apis, options) =>
      apis.custom.getNamespacedCustomObject(
        {
          group: claim ? EXTENSIONS_GROUP : GROUP,
          version: VERSION,
          namespace: apis.namespace,
          plural: claim ? "sandboxclaims" : "sandboxes",
          name,
        },
        options,
      ),
    )) as AgentObject;
  }

  private async ours(id: string, signal: AbortSignal): Promise<AgentObject> {
    let object: AgentObject;
    try {
      object = await this.read(this.kind, id, signal);
    } catch (error) {
      if (status(error) === 404)
        throw kubernetesError("NotFound", `kubernetes: no sandbox ${id}`, { status: 404, cause: error });
      throw error;
    }
    if (!isOurs(object.metadata, this.cluster.options.labels))
      throw kubernetesError(
        "NotFound",
        `kubernetes: ${this.kind} ${id} is not an sbox sandbox of this provider`,
      );
    return object;
  }

  /** The Sandbox behind `id` (the claim's, in claim mode), or `undefined` while a claim has none yet. */
  private async sandboxOf(id: string, signal: AbortSignal): Promise<AgentObject | undefined> {
    if (!this.claims) return this.ours(id, signal);
    const claim = await this.ours(id, signal);
    const name = claim.status?.sandbox?.name;
    if (!name) return undefined;
    return this.read("Sandbox", name, signal).catch((error: unknown) => {
      if (status(error) === 404) return undefined;
      throw error;
    });
  }

  async create(id: string, spec: SandboxSpec, signal: AbortSignal): Promise<void> {
    const options = this.cluster.options;
    const meta = sandboxMetadata(id, spec, options.labels, Date.now());
    const egress = spec.network?.egress;
    if (egress !== undefined && egress !== "allow-all")
      await setEgress(this.cluster, id, egress, options.labels, signal);
    const shutdownTime =
      spec.ttlMs !== undefined ? new Date(Date.now() + spec.ttlMs).toISOString() : undefined;
    let body: Record<string, unknown>;
    if (this.claims) {
      const unusable = (["template", "resources", "ports"] as const).filter(
        (field) => spec[field] !== undefined,
      );
      if (unusable.length > 0) {
        throw kubernetesError(
          "Validation",
          `kubernetes create: a SandboxClaim takes its pod from the warm pool's template, so ${unusable.join(", ")} cannot be set`,
        );
      }
      body = {
        apiVersion: `${EXTENSIONS_GROUP}/${VERSION}`,
        kind: "SandboxClaim",
        metadata: { name: id, labels: meta.labels, annotations: meta.annotations },
        spec: {
          warmPoolRef: { name: options.warmPool },
          additionalPodMetadata: { labels: { [SANDBOX_LABEL]: id } },
          ...(spec.env && Object.keys(spec.env).length > 0
            ? { env: Object.entries(spec.env).map(([name, value]) => ({ name, value })) }
            : {}),
          ...(shutdownTime ? { lifecycle: { shutdownTime, shutdownPolicy: "Delete" } } : {}),
        },
      };
    } else {
      body = {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: "Sandbox",
        metadata: { name: id, labels: meta.labels, annotations: meta.annotations },
        spec: {
          podTemplate: { metadata: { labels: { ...meta.labels } }, spec: podSpecFor(spec, options) },
          operatingMode: "Running",
          ...(shutdownTime ? { shutdownTime, shutdownPolicy: "Delete" } : {}),
        },
      };
    }
    try {
      await this.cluster.call(`create ${this.kind}`, signal, (apis, callOptions) =>
        apis.custom.createNamespacedCustomObject(
          {
            group: this.claims ? EXTENSIONS_GROUP : GROUP,
            version: VERSION,
            namespace: apis.namespace,
            plural: this.claims ? "sandboxclaims" : "sandboxes",
            body,
          },
          callOptions,
        ),
      );
      await this.waitReady(id, signal, spec.template ?? options.image);
    } catch (error) {
      await this.destroy(id, AbortSignal.timeout(30_000)).catch(() => undefined);
      throw error;
    }
  }

  /** Waits until the sandbox's Ready condition is True, failing fast when its pod cannot start. */
  private async waitReady(id: string, signal: AbortSignal, image: string | undefined): Promise<void> {
    const deadline = Date.now() + this.cluster.options.createTimeoutMs;
    let delay = 50;
    let pod: V1Pod | undefined;
    for (;;) {
      if (signal.aborted) throw abortedError("create", signal);
      const sandbox = await this.sandboxOf(id, signal);
      if (sandbox && condition(sandbox, "Ready")?.status === "True") {
        this.pods.delete(id);
        return;
      }
      const ready = condition(sandbox, "Ready");
      if (ready?.reason === "ReconcilerError")
        throw kubernetesError(
          "Validation",
          `kubernetes create: the sandbox controller cannot make the pod of ${id}: ${ready.message ?? ""}`,
        );
      if (this.claims) {
        const claimReady = condition(await this.ours(id, signal), "Ready");
        if (claimReady?.reason === "ReconcilerError")
          throw kubernetesError(
            "Validation",
            `kubernetes create: the claim ${id} cannot get a sandbox: ${claimReady.message ?? ""}`,
          );
      }
      if (sandbox) {
        const podName = sandbox.metadata?.annotations?.[POD_NAME_ANNOTATION] || sandbox.metadata?.name || id;
        pod = await this.cluster
          .call("read pod", signal, (apis, options) =>
            apis.core.readNamespacedPod({ name: podName, namespace: apis.namespace }, options),
          )
          .catch((error: unknown) => {
            if (status(error) === 404) return undefined;
            throw error;
          });
        const failure = pod ? podFailure(pod, image) : undefined;
        if (failure) throw failure;
      }
      if (Date.now() >= deadline) {
        throw kubernetesError(
          "Timeout",
          `kubernetes create: ${this.kind} ${id} was not ready within ${this.cluster.options.createTimeoutMs} ms (${ready?.message ?? podSummary(pod)})`,
          { retryable: true },
        );
      }
      await sleep(delay);
      delay = Math.min(delay * 2, 1_000);
    }
  }

  async find(id: string, signal: AbortSignal): Promise<void> {
    await this.ours(id, signal);
  }

  async pod(id: string, signal: AbortSignal): Promise<PodTarget> {
    const known = this.pods.get(id);
    if (known) return known;
    const sandbox = await this.sandboxOf(id, signal);
    if (!sandbox) throw kubernetesError("InvalidState", `kubernetes: the claim ${id} has no sandbox yet`);
    const apis = await this.cluster.apis();
    const pod = sandbox.metadata?.annotations?.[POD_NAME_ANNOTATION] || sandbox.metadata?.name || id;
    let container = CONTAINER_NAME;
    if (this.claims) {
      // A claim's pod comes from the warm pool's template, whose container may have any name.
      const found = await this.cluster.call("read pod", signal, (a, options) =>
        a.core.readNamespacedPod({ name: pod, namespace: a.namespace }, options),
      );
      container = found.spec?.containers?.[0]?.name ?? CONTAINER_NAME;
    }
    const target = { namespace: apis.namespace, pod, container };
    this.pods.set(id, target);
    return target;
  }

  async info(id: string, signal: AbortSignal): Promise<DriverSandboxInfo> {
    const object = await this.ours(id, signal);
    const sandbox = this.claims ? await this.sandboxOf(id, signal) : object;
    let state: SandboxState = sandbox ? sandboxState(sandbox) : "starting";
    if (this.claims && object.metadata?.deletionTimestamp) state = "destroyed";
    const shutdown = this.claims ? object.spec?.lifecycle?.shutdownTime : object.spec?.shutdownTime;
    return sandboxInfo(id, object.metadata, state, object, shutdown ? new Date(shutdown) : undefined);
  }

  async *list(filter: ListFilter, signal: AbortSignal): AsyncIterable<DriverSandboxInfo> {
    const selector = listSelector(this.cluster.options.labels, filter);
    const result = (await this.cluster.call(`list ${this.kind}`, signal, (apis, options) =>
      apis.custom.listNamespacedCustomObject(
        {
          group: this.claims ? EXTENSIONS_GROUP : GROUP,
          version: VERSION,
          namespace: apis.namespace,
          plural: this.claims ? "sandboxclaims" : "sandboxes",
          labelSelector: selector,
        },
        options,
      ),
    )) as { items?: AgentObject[] };
    for (const item of result.items ?? []) {
      const name = item.metadata?.name;
      if (!name || !isOurs(item.metadata, this.cluster.options.labels)) continue;
      if (this.claims) {
        yield await this.info(name, signal).catch(() => sandboxInfo(name, item.metadata, "unknown", item));
        continue;
      }
      const shutdown = item.spec?.shutdownTime;
      yield sandboxInfo(
        name,
        item.metadata,
        sandboxState(item),
        item,
        shutdown ? new Date(shutdown) : undefined,
      );
    }
  }

  async destroy(id: string, signal: AbortSignal): Promise<void> {
    let podName: string | undefined;
    try {
      podName = (await this.pod(id, signal)).pod;
    } catch {
      podName = undefined;
    }
    try {
      await this.cluster.call(`delete ${this.kind}`, signal, (apis, options) =>
        apis.custom.deleteNamespacedCustomObject(
          {
            group: this.claims ? EXTENSIONS_GROUP : GROUP,
            version: VERSION,
            namespace: apis.namespace,
            plural: this.claims ? "sandboxclaims" : "sandboxes",
            name: id,
            propagationPolicy: "Background",
          },
          options,
        ),
      );
    } catch (error) {
      if (status(error) !== 404) throw error;
    }
    this.pods.delete(id);
    await deleteEgress(this.cluster, id, signal);
    await waitGone(() => this.read(this.kind, id, signal), signal, `${this.kind} ${id}`);
    if (podName) {
      const name = podName;
      await waitGone(
        () =>
          this.cluster.call("read pod", signal, (apis, options) =>
            apis.core.readNamespacedPod({ name, namespace: apis.namespace }, options),
          ),
        signal,
        `pod ${name}`,
      );
    }
  }

  private async patch(
    kind: "Sandbox" | "SandboxClaim",
    name: string,
    operations: unknown[],
    signal: AbortSignal,
  ): Promise<void> {
    const claim = kind === "SandboxClaim";
    await this.cluster.call(`patch ${kind}`, signal, (apis, options) =>
      apis.custom.patchNamespacedCustomObject(
        {
          group: claim ? EXTENSIONS_GROUP : GROUP,
          version: VERSION,
          namespace: apis.namespace,
          plural: claim ? "sandboxclaims" : "sandboxes",
          name,
          body: operations,
        },
        options,
      ),
    );
  }

  async setTimeout(id: string, ttlMs: number, signal: AbortSignal): Promise<void> {
    await this.ours(id, signal);
    const shutdownTime = new Date(Date.now() + ttlMs).toISOString();
    if (this.claims)
      await this.patch(
        "SandboxClaim",
        id,
        [{ op: "add", path: "/spec/lifecycle", value: { shutdownTime, shutdownPolicy: "Delete" } }],
        signal,
      );
    else {
      await this.patch(
        "Sandbox",
        id,
        [
          { op: "add", path: "/spec/shutdownTime", value: shutdownTime },
          { op: "add", path: "/spec/shutdownPolicy", value: "Delete" },
        ],
        signal,
      );
    }
  }

  private async setMode(id: string, mode: "Running" | "Suspended", signal: AbortSignal): Promise<void> {
    const sandbox = await this.sandboxOf(id, signal);
    const name = sandbox?.metadata?.name;
    if (!name)
      throw kubernetesError(
        "InvalidState",
        `kubernetes: ${id} has no sandbox to ${mode === "Suspended" ? "stop" : "resume"}`,
      );
    await this.patch("Sandbox", name, [{ op: "add", path: "/spec/operatingMode", value: mode }], signal);
    this.pods.delete(id);
    const deadline = Date.now() + this.cluster.options.createTimeoutMs;
    let delay = 50;
    for (;;) {
      if (signal.aborted) throw abortedError(mode === "Suspended" ? "stop" : "resume", signal);
      const current = await this.read("Sandbox", name, signal);
      if (mode === "Suspended" && condition(current, "Suspended")?.status === "True") return;
      if (mode === "Running" && condition(current, "Ready")?.status === "True") return;
      if (Date.now() >= deadline) {
        throw kubernetesError(
          "Timeout",
          `kubernetes ${mode === "Suspended" ? "stop" : "resume"}: sandbox ${name} did not get there within ${this.cluster.options.createTimeoutMs} ms`,
          { retryable: true },
        );
      }
      await sleep(delay);
      delay = Math.min(delay * 2, 1_000);
    }
  }

  stop(id: string, signal: AbortSignal): Promise<void> {
    return this.setMode(id, "Suspended", signal);
  }

  resume(id: string, signal: AbortSignal): Promise<void> {
    return this.setMode(id, "Running", signal);
  }
}
