/**
 * A small controller for kubernetes-sigs/agent-sandbox, after its documented behaviour (api/v1beta1 and
 * extensions/api/v1beta1): a `Sandbox` keeps one pod from its `podTemplate` (named after the sandbox, or
 * the `agents.x-k8s.io/pod-name` annotation, labelled `agents.x-k8s.io/sandbox-name-hash`, owned by the
 * sandbox) while `operatingMode` is `Running`, deletes it when `Suspended`, and tears it down at
 * `shutdownTime` (then deletes itself for `shutdownPolicy: Delete`); its status carries the `Ready`,
 * `Suspended`, `PodScheduled` and `Finished` conditions, pod IPs, node name and selector, and a headless
 * Service when `service: true`. A `SandboxWarmPool` keeps `replicas` unclaimed sandboxes of its template.
 * A `SandboxClaim` adopts a ready sandbox of its pool (ownership moves to the claim, the pool refills) or,
 * when none is ready or the claim sets env, creates one named after the claim from the template (env
 * injection as the template's `envVarsInjectionPolicy` allows); it mirrors the sandbox's readiness and
 * expires at its own `lifecycle.shutdownTime`. Template-managed network policies are not created.
 */
import type { EmulatorClock, EmulatorTimer } from "../clock.js";
import type { EventRecorder } from "./kubernetes-events.js";
import { isOwnedBy, type KubeObject, nameHash, ownerReferenceTo, timestamp } from "./kubernetes-objects.js";
import {
  POD,
  SANDBOX,
  SANDBOX_CLAIM,
  SANDBOX_TEMPLATE,
  SANDBOX_WARM_POOL,
  SERVICE,
} from "./kubernetes-resources.js";
import { invalid } from "./kubernetes-status.js";
import type { KubernetesStore } from "./kubernetes-store.js";

const SANDBOX_NAME_HASH = "agents.x-k8s.io/sandbox-name-hash";
const POD_NAME_ANNOTATION = "agents.x-k8s.io/pod-name";
const WARM_POOL_LABEL = "agents.x-k8s.io/warm-pool-sandbox";
const TEMPLATE_REF_HASH = "agents.x-k8s.io/sandbox-template-ref-hash";
const TEMPLATE_REF_ANNOTATION = "agents.x-k8s.io/sandbox-template-ref";
const LAUNCH_TYPE = "agents.x-k8s.io/launch-type";
const CLAIM_UID = "agents.x-k8s.io/claim-uid";
const CLAIM_SANDBOX = "agents.x-k8s.io/sandbox-name";

interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

interface PodTemplate {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: { containers?: { name: string; env?: { name: string; value?: string }[] }[] } & Record<
    string,
    unknown
  >;
}

interface Blueprint {
  podTemplate?: PodTemplate;
  service?: boolean;
  volumeClaimTemplates?: unknown[];
}

function spec<T>(object: KubeObject): T {
  return (object.spec ?? {}) as T;
}

function conditionsOf(object: KubeObject): Condition[] {
  return ((object.status ?? {}) as { conditions?: Condition[] }).conditions ?? [];
}

function withConditions(
  previous: Condition[],
  next: Condition[],
  now: string,
  generation: number | undefined,
): Condition[] {
  return next.map((c) => {
    const old = previous.find((p) => p.type === c.type);
    return {
      ...c,
      lastTransitionTime: old && old.status === c.status ? (old.lastTransitionTime ?? now) : now,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    };
  });
}

function readyOf(object: KubeObject | undefined): Condition | undefined {
  return object ? conditionsOf(object).find((c) => c.type === "Ready") : undefined;
}

/** Installs the agent-sandbox admission and controller on `store`; returns the function that stops it. */
export function manageAgentSandboxes(
  store: KubernetesStore,
  clock: EmulatorClock,
  events: EventRecorder,
): () => void {
  const requirePodTemplate = (kind: string, object: KubeObject) => {
    const template = spec<Blueprint>(object).podTemplate;
    if (
      !template ||
      typeof template !== "object" ||
      !Array.isArray(template.spec?.containers) ||
      template.spec.containers.length === 0
    ) {
      throw invalid(
        kind,
        kind === "Sandbox" ? "agents.x-k8s.io" : "extensions.agents.x-k8s.io",
        object.metadata.name ?? "",
        [
          {
            field: "spec.podTemplate.spec.containers",
            message: "Required value",
            reason: "FieldValueRequired",
          },
        ],
      );
    }
  };
  store.setHooks(SANDBOX, {
    create(sandbox) {
      requirePodTemplate("Sandbox", sandbox);
      const s = spec<Record<string, unknown>>(sandbox);
      s.operatingMode ??= "Running";
      if (s.operatingMode !== "Running" && s.operatingMode !== "Suspended") {
        throw invalid("Sandbox", "agents.x-k8s.io", sandbox.metadata.name ?? "", [
          {
            field: "spec.operatingMode",
            message: `Unsupported value: "${String(s.operatingMode)}": supported values: "Running", "Suspended"`,
            reason: "FieldValueNotSupported",
          },
        ]);
      }
      if (s.shutdownTime !== undefined) s.shutdownPolicy ??= "Retain";
      sandbox.status = {};
    },
  });
  store.setHooks(SANDBOX_TEMPLATE, {
    create(template) {
      requirePodTemplate("SandboxTemplate", template);
      const s = spec<Record<string, unknown>>(template);
      if (s.networkPolicy !== undefined && s.networkPolicyManagement !== "Unmanaged") {
        throw invalid("SandboxTemplate", "extensions.agents.x-k8s.io", template.metadata.name ?? "", [
          {
            field: "spec.networkPolicy",
            message:
              "Forbidden: the sbox emulator's controller does not manage template network policies; set networkPolicyManagement: Unmanaged and create a NetworkPolicy",
            reason: "FieldValueForbidden",
          },
        ]);
      }
      s.networkPolicyManagement ??= "Unmanaged";
      s.envVarsInjectionPolicy ??= "Disallowed";
      s.volumeClaimTemplatesPolicy ??= "Disallowed";
    },
  });
  store.setHooks(SANDBOX_WARM_POOL, {
    create(pool) {
      const s = spec<Record<string, unknown>>(pool);
      s.replicas ??= 1;
      if (!Number.isInteger(s.replicas) || (s.replicas as number) < 0) {
        throw invalid("SandboxWarmPool", "extensions.agents.x-k8s.io", pool.metadata.name ?? "", [
          { field: "spec.replicas", message: "Invalid value: must be >= 0" },
        ]);
      }
      if (!(s.sandboxTemplateRef as { name?: string } | undefined)?.name) {
        throw invalid("SandboxWarmPool", "extensions.agents.x-k8s.io", pool.metadata.name ?? "", [
          { field: "spec.sandboxTemplateRef.name", message: "Required value", reason: "FieldValueRequired" },
        ]);
      }
      pool.status = {};
    },
  });
  store.setHooks(SANDBOX_CLAIM, {
    create(claim) {
      if (!spec<{ warmPoolRef?: { name?: string } }>(claim).warmPoolRef?.name) {
        throw invalid("SandboxClaim", "extensions.agents.x-k8s.io", claim.metadata.name ?? "", [
          { field: "spec.warmPoolRef.name", message: "Required value", reason: "FieldValueRequired" },
        ]);
      }
      claim.status = {};
    },
  });

  const timers = new Map<string, EmulatorTimer>();
  const wakeAt = (key: string, at: number) => {
    if (timers.has(key)) return;
    timers.set(
      key,
      clock.setTimer(
        () => {
          timers.delete(key);
          schedule();
        },
        Math.max(0, at - clock.now()),
      ),
    );
  };
  const safely = (what: () => void) => {
    try {
      what();
    } catch {
      // The next pass retries: objects change under the controller all the time.
    }
  };
  const writeStatus = (definition: typeof SANDBOX, object: KubeObject, status: Record<string, unknown>) => {
    if (JSON.stringify(stripTimes(object.status ?? {})) === JSON.stringify(stripTimes(status))) return;
    object.status = status;
    safely(() => store.update(definition, object, { subresource: "status" }));
  };

  const reconcileSandbox = (sandbox: KubeObject) => {
    if (sandbox.metadata.deletionTimestamp) return;
    const s = spec<Blueprint & { operatingMode?: string; shutdownTime?: string; shutdownPolicy?: string }>(
      sandbox,
    );
    const namespace = sandbox.metadata.namespace ?? "default";
    const name = sandbox.metadata.name ?? "";
    const hash = nameHash(name);
    const podName = sandbox.metadata.annotations?.[POD_NAME_ANNOTATION] || name;
    const now = timestamp(clock.now());
    let pod = store.get(POD, namespace, podName);
    const owned = pod && isOwnedBy(pod, sandbox.metadata.uid ?? "");
    const previous = conditionsOf(sandbox);
    const generation = sandbox.metadata.generation;
    const shutdown = s.shutdownTime ? Date.parse(s.shutdownTime) : undefined;
    if (shutdown !== undefined && clock.now() >= shutdown) {
      if (pod && owned) safely(() => store.delete(POD, namespace, podName));
      safely(() => {
        const service = store.get(SERVICE, namespace, name);
        if (service && isOwnedBy(service, sandbox.metadata.uid ?? "")) store.delete(SERVICE, namespace, name);
      });
      if (s.shutdownPolicy === "Delete") {
        safely(() => store.delete(SANDBOX, namespace, name));
        return;
      }
      writeStatus(SANDBOX, sandbox, {
        conditions: withConditions(
          previous,
          [
            {
              type: "Ready",
              status: "False",
              reason: "SandboxExpired",
              message: "the sandbox reached its shutdownTime",
            },
          ],
          now,
          generation,
        ),
      });
      return;
    }
    if (shutdown !== undefined) wakeAt(`sandbox/${sandbox.metadata.uid}/${shutdown}`, shutdown);
    if (s.operatingMode === "Suspended") {
      if (pod && owned && !pod.metadata.deletionTimestamp)
        safely(() => store.delete(POD, namespace, podName));
      const gone = !pod || !owned;
      writeStatus(SANDBOX, sandbox, {
        conditions: withConditions(
          previous,
          [
            {
              type: "Ready",
              status: "False",
              reason: "SandboxSuspended",
              message: "the sandbox is suspended",
            },
            gone
              ? {
                  type: "Suspended",
                  status: "True",
                  reason: "PodTerminated",
                  message: "the pod has been terminated",
                }
              : {
                  type: "Suspended",
                  status: "False",
                  reason: "PodTerminating",
                  message: "the pod is terminating",
                },
          ],
          now,
          generation,
        ),
        selector: `${SANDBOX_NAME_HASH}=${hash}`,
      });
      return;
    }
    let failure: string | undefined;
    if (!pod) {
      const template = s.podTemplate!;
      try {
        pod = store.create(POD, namespace, {
          apiVersion: "v1",
          kind: "Pod",
          metadata: {
            name: podName,
            labels: { ...(template.metadata?.labels ?? {}), [SANDBOX_NAME_HASH]: hash },
            ...(template.metadata?.annotations ? { annotations: { ...template.metadata.annotations } } : {}),
            ownerReferences: [ownerReferenceTo(sandbox)],
          },
          spec: structuredClone(template.spec) as Record<string, unknown>,
        });
        events(sandbox, "Normal", "PodCreated", `Created pod ${podName}`, "sandbox-controller");
      } catch (error) {
        failure = error instanceof Error ? error.message : String(error);
        events(sandbox, "Warning", "ReconcilerError", failure, "sandbox-controller");
      }
    }
    let serviceName: string | undefined;
    if (s.service === true) {
      serviceName = name;
      if (!store.get(SERVICE, namespace, name)) {
        safely(() =>
          store.create(SERVICE, namespace, {
            apiVersion: "v1",
            kind: "Service",
            metadata: {
              name,
              labels: { [SANDBOX_NAME_HASH]: hash },
              ownerReferences: [ownerReferenceTo(sandbox)],
            },
            spec: { clusterIP: "None", selector: { [SANDBOX_NAME_HASH]: hash } },
          }),
        );
      }
    }
    const podStatus = (pod?.status ?? {}) as { phase?: string; podIP?: string; conditions?: Condition[] };
    const podReady = podStatus.conditions?.find((c) => c.type === "Ready")?.status === "True";
    const ready = owned !== false && podStatus.phase === "Running" && podReady && !!podStatus.podIP;
    const conditions: Condition[] = [];
    if (failure)
      conditions.push({ type: "Ready", status: "False", reason: "ReconcilerError", message: failure });
    else if (pod && !owned)
      conditions.push({
        type: "Ready",
        status: "False",
        reason: "ReconcilerError",
        message: `pod ${podName} exists and is not owned by this sandbox`,
      });
    else if (podStatus.phase === "Succeeded" || podStatus.phase === "Failed") {
      conditions.push({
        type: "Ready",
        status: "False",
        reason: podStatus.phase === "Succeeded" ? "PodSucceeded" : "PodFailed",
        message: `the pod ${podStatus.phase === "Succeeded" ? "completed" : "failed"}`,
      });
      conditions.push({
        type: "Finished",
        status: "True",
        reason: podStatus.phase === "Succeeded" ? "PodSucceeded" : "PodFailed",
        message: `pod ${podName} reached phase ${podStatus.phase}`,
      });
    } else if (ready)
      conditions.push({
        type: "Ready",
        status: "True",
        reason: "DependenciesReady",
        message: "the pod is ready",
      });
    else {
      const waiting = (
        (pod?.status ?? {}) as {
          containerStatuses?: { state?: { waiting?: { reason?: string; message?: string } } }[];
        }
      ).containerStatuses?.[0]?.state?.waiting;
      conditions.push({
        type: "Ready",
        status: "False",
        reason: "DependenciesNotReady",
        message: waiting?.reason
          ? `pod ${podName} is not ready: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ""}`
          : `pod ${podName} is not ready`,
      });
    }
    const scheduled = podStatus.conditions?.find((c) => c.type === "PodScheduled");
    if (scheduled)
      conditions.push({
        type: "PodScheduled",
        status: scheduled.status,
        reason: scheduled.reason ?? "PodScheduled",
        message: scheduled.message ?? "",
      });
    const status: Record<string, unknown> = {
      conditions: withConditions(previous, conditions, now, generation),
      selector: `${SANDBOX_NAME_HASH}=${hash}`,
    };
    if (podStatus.podIP && owned !== false && !pod?.metadata.deletionTimestamp) {
      status.podIPs = [podStatus.podIP];
      status.nodeName = (pod?.spec as { nodeName?: string } | undefined)?.nodeName;
    }
    if (serviceName) {
      status.service = serviceName;
      status.serviceFQDN = `${serviceName}.${namespace}.svc.cluster.local`;
    }
    writeStatus(SANDBOX, sandbox, status);
  };

  const poolMembers = (pool: KubeObject) =>
    store
      .list(SANDBOX, pool.metadata.namespace)
      .filter(
        (s) =>
          s.metadata.labels?.[WARM_POOL_LABEL] === nameHash(pool.metadata.name ?? "") &&
          isOwnedBy(s, pool.metadata.uid ?? "") &&
          !s.metadata.deletionTimestamp,
      );

  const reconcilePool = (pool: KubeObject) => {
    if (pool.metadata.deletionTimestamp) return;
    const s = spec<{ replicas?: number; sandboxTemplateRef?: { name: string } }>(pool);
    const namespace = pool.metadata.namespace ?? "default";
    const templateName = s.sandboxTemplateRef?.name ?? "";
    const template = store.get(SANDBOX_TEMPLATE, namespace, templateName);
    const hash = nameHash(pool.metadata.name ?? "");
    const members = poolMembers(pool);
    const wanted = s.replicas ?? 1;
    if (template && members.length < wanted) {
      const blueprint = spec<Blueprint>(template);
      for (let i = members.length; i < wanted; i++) {
        const podTemplate = structuredClone(blueprint.podTemplate!);
        podTemplate.metadata = {
          ...(podTemplate.metadata ?? {}),
          labels: {
            ...(podTemplate.metadata?.labels ?? {}),
            [WARM_POOL_LABEL]: hash,
            [TEMPLATE_REF_HASH]: nameHash(templateName),
          },
        };
        safely(() =>
          store.create(SANDBOX, namespace, {
            apiVersion: "agents.x-k8s.io/v1beta1",
            kind: "Sandbox",
            metadata: {
              generateName: `${pool.metadata.name}-`,
              labels: {
                [WARM_POOL_LABEL]: hash,
                [TEMPLATE_REF_HASH]: nameHash(templateName),
                [LAUNCH_TYPE]: "warm",
              },
              annotations: { [TEMPLATE_REF_ANNOTATION]: templateName },
              ownerReferences: [ownerReferenceTo(pool)],
            },
            spec: {
              podTemplate,
              ...(blueprint.service !== undefined ? { service: blueprint.service } : {}),
              operatingMode: "Running",
            },
          }),
        );
      }
    }
    if (members.length > wanted) {
      for (const extra of members.slice(wanted))
        safely(() => store.delete(SANDBOX, namespace, extra.metadata.name ?? ""));
    }
    const current = poolMembers(pool);
    writeStatus(SANDBOX_WARM_POOL, pool, {
      replicas: current.length,
      readyReplicas: current.filter((m) => readyOf(m)?.status === "True").length,
      selector: `${WARM_POOL_LABEL}=${hash}`,
      observedGeneration: pool.metadata.generation ?? 1,
    });
  };

  const coldSandbox = (claim: KubeObject, template: KubeObject): string | Error => {
    const t = spec<Blueprint & { envVarsInjectionPolicy?: string }>(template);
    const env = spec<{ env?: { name: string; value: string; containerName?: string }[] }>(claim).env ?? [];
    const podTemplate = structuredClone(t.podTemplate!);
    if (env.length > 0) {
      const policy = t.envVarsInjectionPolicy ?? "Disallowed";
      if (policy !== "Allowed" && policy !== "Overrides")
        return new Error("environment variable injection is not allowed by the template policy");
      for (const variable of env) {
        const container =
          podTemplate.spec.containers?.find((c) => c.name === variable.containerName) ??
          podTemplate.spec.containers?.[0];
        if (!container) continue;
        container.env ??= [];
        const existing = container.env.find((e) => e.name === variable.name);
        if (existing && policy === "Allowed")
          return new Error(
            `environment variable ${variable.name} is defined by the template and the policy does not allow overriding it`,
          );
        if (existing) existing.value = variable.value;
        else container.env.push({ name: variable.name, value: variable.value });
      }
    }
    const uid = claim.metadata.uid ?? "";
    podTemplate.metadata = {
      ...(podTemplate.metadata ?? {}),
      labels: {
        ...(podTemplate.metadata?.labels ?? {}),
        [CLAIM_UID]: uid,
        [TEMPLATE_REF_HASH]: nameHash(template.metadata.name ?? ""),
      },
    };
    const created = store.create(SANDBOX, claim.metadata.namespace, {
      apiVersion: "agents.x-k8s.io/v1beta1",
      kind: "Sandbox",
      metadata: {
        name: claim.metadata.name,
        labels: {
          [CLAIM_UID]: uid,
          [LAUNCH_TYPE]: "cold",
          [TEMPLATE_REF_HASH]: nameHash(template.metadata.name ?? ""),
        },
        annotations: { [TEMPLATE_REF_ANNOTATION]: template.metadata.name ?? "" },
        ownerReferences: [ownerReferenceTo(claim)],
      },
      spec: {
        podTemplate,
        ...(t.service !== undefined ? { service: t.service } : {}),
        operatingMode: "Running",
      },
    });
    return created.metadata.name ?? "";
  };

  const adopt = (claim: KubeObject, pool: KubeObject): string | undefined => {
    const candidate = poolMembers(pool).find((m) => readyOf(m)?.status === "True");
    if (!candidate) return undefined;
    const uid = claim.metadata.uid ?? "";
    candidate.metadata.labels = {
      ...(candidate.metadata.labels ?? {}),
      [LAUNCH_TYPE]: "warm",
      [CLAIM_UID]: uid,
    };
    delete candidate.metadata.labels[WARM_POOL_LABEL];
    candidate.metadata.ownerReferences = [ownerReferenceTo(claim)];
    candidate.metadata.annotations = {
      ...(candidate.metadata.annotations ?? {}),
      [POD_NAME_ANNOTATION]: candidate.metadata.name ?? "",
    };
    const podTemplate = spec<Blueprint>(candidate).podTemplate!;
    podTemplate.metadata = {
      ...(podTemplate.metadata ?? {}),
      labels: { ...(podTemplate.metadata?.labels ?? {}), [CLAIM_UID]: uid },
    };
    delete podTemplate.metadata.labels?.[WARM_POOL_LABEL];
    store.update(SANDBOX, candidate);
    const pod = store.get(POD, candidate.metadata.namespace, candidate.metadata.name ?? "");
    if (pod) {
      pod.metadata.labels = { ...(pod.metadata.labels ?? {}), [CLAIM_UID]: uid };
      delete pod.metadata.labels[WARM_POOL_LABEL];
      safely(() => store.update(POD, pod));
    }
    events(
      claim,
      "Normal",
      "SandboxAdopted",
      `Adopted warm sandbox ${candidate.metadata.name} from pool ${pool.metadata.name}`,
      "sandboxclaim-controller",
    );
    return candidate.metadata.name ?? "";
  };

  const reconcileClaim = (claim: KubeObject) => {
    if (claim.metadata.deletionTimestamp) return;
    const s = spec<{
      warmPoolRef: { name: string };
      env?: unknown[];
      volumeClaimTemplates?: unknown[];
      lifecycle?: { shutdownTime?: string; shutdownPolicy?: string };
    }>(claim);
    const namespace = claim.metadata.namespace ?? "default";
    const now = timestamp(clock.now());
    const previous = conditionsOf(claim);
    let assigned =
      claim.metadata.annotations?.[CLAIM_SANDBOX] ||
      ((claim.status ?? {}) as { sandbox?: { name?: string } }).sandbox?.name;
    const shutdown = s.lifecycle?.shutdownTime ? Date.parse(s.lifecycle.shutdownTime) : undefined;
    if (shutdown !== undefined && clock.now() >= shutdown) {
      const policy = s.lifecycle?.shutdownPolicy ?? "Retain";
      if (policy === "Delete" || policy === "DeleteForeground") {
        safely(() => store.delete(SANDBOX_CLAIM, namespace, claim.metadata.name ?? ""));
        return;
      }
      if (assigned) safely(() => store.delete(SANDBOX, namespace, assigned!));
      writeStatus(SANDBOX_CLAIM, claim, {
        conditions: withConditions(
          previous,
          [
            {
              type: "Ready",
              status: "False",
              reason: "ClaimExpired",
              message: "the claim reached its shutdownTime",
            },
          ],
          now,
          claim.metadata.generation,
        ),
        ...(assigned ? { sandbox: { name: assigned } } : {}),
      });
      return;
    }
    if (shutdown !== undefined) wakeAt(`claim/${claim.metadata.uid}/${shutdown}`, shutdown);
    let failure: string | undefined;
    if (!assigned) {
      const pool = store.get(SANDBOX_WARM_POOL, namespace, s.warmPoolRef.name);
      const templateName = pool
        ? spec<{ sandboxTemplateRef?: { name: string } }>(pool).sandboxTemplateRef?.name
        : undefined;
      const template = templateName ? store.get(SANDBOX_TEMPLATE, namespace, templateName) : undefined;
      if (!pool) failure = `SandboxWarmPool ${s.warmPoolRef.name} not found`;
      else if (!template) failure = `SandboxTemplate ${templateName} of the warm pool not found`;
      else {
        const cold = (s.env?.length ?? 0) > 0 || (s.volumeClaimTemplates?.length ?? 0) > 0;
        let name = cold ? undefined : adopt(claim, pool);
        if (!name) {
          const made = coldSandbox(claim, template);
          if (made instanceof Error) failure = made.message;
          else name = made;
        }
        if (name) {
          assigned = name;
          claim.metadata.annotations = { ...(claim.metadata.annotations ?? {}), [CLAIM_SANDBOX]: name };
          safely(() => {
            const updated = store.update(SANDBOX_CLAIM, claim);
            claim.metadata = updated.metadata;
          });
        }
      }
    }
    const sandbox = assigned ? store.get(SANDBOX, namespace, assigned) : undefined;
    const ready = readyOf(sandbox);
    const condition: Condition = failure
      ? { type: "Ready", status: "False", reason: "ReconcilerError", message: failure }
      : ready
        ? { type: "Ready", status: ready.status, reason: ready.reason, message: ready.message }
        : {
            type: "Ready",
            status: "False",
            reason: "SandboxNotReady",
            message: assigned ? `sandbox ${assigned} is not ready` : "no sandbox yet",
          };
    const podIPs = ((sandbox?.status ?? {}) as { podIPs?: string[] }).podIPs;
    writeStatus(SANDBOX_CLAIM, claim, {
      conditions: withConditions(previous, [condition], now, claim.metadata.generation),
      ...(assigned ? { sandbox: { name: assigned, ...(podIPs ? { podIPs } : {}) } } : {}),
    });
  };

  let running = false;
  let again = false;
  const pass = () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        for (const sandbox of store.list(SANDBOX)) safely(() => reconcileSandbox(sandbox));
        for (const pool of store.list(SANDBOX_WARM_POOL)) safely(() => reconcilePool(pool));
        for (const claim of store.list(SANDBOX_CLAIM)) safely(() => reconcileClaim(claim));
      } while (again);
    } finally {
      running = false;
    }
  };
  let scheduled = false;
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      pass();
    });
  };
  const watched = new Set([SANDBOX, SANDBOX_TEMPLATE, SANDBOX_WARM_POOL, SANDBOX_CLAIM, POD]);
  const unsubscribe = store.subscribe((event) => {
    if (watched.has(event.definition)) schedule();
  });
  return () => {
    unsubscribe();
    for (const timer of timers.values()) timer.cancel();
    timers.clear();
  };
}

function stripTimes(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (key, v) => (key === "lastTransitionTime" ? undefined : v)));
}
