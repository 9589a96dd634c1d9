/**
 * `startKubernetesEmulator()`: an offline Kubernetes API server with one node. kubectl, client-go and
 * `@kubernetes/client-node` use it through the kubeconfig it prints (HTTPS with its own CA, a bearer
 * token). Every pod is a sandbox of the backend (Docker by default: one container per pod, made from the
 * pod's image), so exec, logs, cp and port-forward reach real processes; network policies restrict the
 * sandboxes' egress for real; kubernetes-sigs/agent-sandbox's CRDs are served with a small controller.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { type EmulatorBackendInput, openBackend } from "../backend.js";
import { type EmulatorClock, systemClock } from "../clock.js";
import {
  createFaultInjector,
  type EmulatorHttpServer,
  type FaultInjector,
  type FaultRule,
  type RequestLogEntry,
  startHttpServer,
} from "../http-server.js";
import { manageAgentSandboxes } from "./kubernetes-agent-sandbox.js";
import { serveKubernetesApi } from "./kubernetes-api.js";
import { selfSignedCertificate } from "./kubernetes-certificate.js";
import { eventRecorder } from "./kubernetes-events.js";
import { kubeconfigYaml } from "./kubernetes-kubeconfig.js";
import { Kubelet, type KubernetesImageMap } from "./kubernetes-kubelet.js";
import { manageNamespaces } from "./kubernetes-namespaces.js";
import { admitNetworkPolicy, egressForPod } from "./kubernetes-network-policies.js";
import { serveNodePorts } from "./kubernetes-node-ports.js";
import type { KubeObject } from "./kubernetes-objects.js";
import { admitPod, admitPodUpdate, podSpecOf } from "./kubernetes-pod-admission.js";
import { NAMESPACE, NETWORK_POLICY, NODE, POD } from "./kubernetes-resources.js";
import { manageServices } from "./kubernetes-services.js";
import { KubeApiError } from "./kubernetes-status.js";
import { KubernetesStore } from "./kubernetes-store.js";
import { streamingUpgrades } from "./kubernetes-streaming.js";

/** The image pods of the docker backend run when the pod names one the `images` map does not describe. */
export const KUBERNETES_DOCKER_DEFAULT_IMAGE = "sbox-busybox:latest";

/** Options of {@link startKubernetesEmulator}. */
export interface KubernetesEmulatorOptions {
  /** Where pods run: `"docker"` (default), `"local"`, `{ name, options }` or a `SandboxProvider`. */
  backend?: EmulatorBackendInput | undefined;
  /** Port of the API server; 0 or absent picks a free one. */
  port?: number | undefined;
  /** Address to listen on (default `127.0.0.1`). */
  host?: string | undefined;
  /** Bearer tokens the API accepts (default: one fresh token). */
  tokens?: readonly string[] | undefined;
  /** Namespaces that exist from the start besides `default`, `kube-system`, `kube-public`, `kube-node-lease`. */
  namespaces?: readonly string[] | undefined;
  /** Images by name: backend template, `false` (cannot be pulled), or template plus entrypoint/cmd. */
  images?: KubernetesImageMap | undefined;
  /** RuntimeClasses the node has (`runtimeClassName` of a pod must be one of them). */
  runtimeClasses?: readonly string[] | undefined;
  /** Extra labels of the node (for `nodeSelector`). */
  nodeLabels?: Readonly<Record<string, string>> | undefined;
  /** First restart back-off of a crash-looping container (default 10 000 ms, as the kubelet). */
  restartBackoffMs?: number | undefined;
  /** Back-off before a failed image pull is retried (default 10 000 ms). */
  pullBackoffMs?: number | undefined;
  /** Whether the backend enforces egress allow-lists (default: asked of the backend; neither shipped one does). */
  egressAllowLists?: boolean | undefined;
  clock?: EmulatorClock | undefined;
  faults?: readonly FaultRule[] | undefined;
}

/** A running Kubernetes emulator. */
export interface KubernetesEmulator {
  /** The API server URL (`https://127.0.0.1:<port>`). */
  readonly url: string;
  /** A kubeconfig for it (YAML): `kubectl --kubeconfig` and `KubeConfig.loadFromString` take it as is. */
  readonly kubeconfig: string;
  /** The first accepted bearer token. */
  readonly token: string;
  /** The CA certificate (PEM) the server's certificate is checked against. */
  readonly caPem: string;
  /** Nothing beyond the kubeconfig is needed; kept for the common emulator shape. */
  readonly env: Readonly<Record<string, string>>;
  readonly backend: string;
  readonly faults: FaultInjector;
  readonly log: readonly RequestLogEntry[];
  /** `namespace/name` of every pod that exists. */
  podNames(): string[];
  /** The backend sandboxes pods currently run in. */
  readonly machines: number;
  /** Stops serving, ends every pod and destroys every backend sandbox. */
  close(): Promise<void>;
}

const BUILT_IN_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];
const NODE_NAME = "sbox-emulator-node";

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Starts a Kubernetes emulator. */
export async function startKubernetesEmulator(
  options: KubernetesEmulatorOptions = {},
): Promise<KubernetesEmulator> {
  const host = options.host ?? "127.0.0.1";
  const clock = options.clock ?? systemClock;
  const tokens =
    options.tokens && options.tokens.length > 0
      ? [...options.tokens]
      : [randomBytes(24).toString("base64url")];
  const backend = await openBackend(options.backend ?? "docker", {
    vendor: "kubernetes",
    docker: { image: KUBERNETES_DOCKER_DEFAULT_IMAGE },
  });
  const store = new KubernetesStore(clock);
  const events = eventRecorder(store, clock);
  const nodeLabels: Record<string, string> = {
    "kubernetes.io/hostname": NODE_NAME,
    "kubernetes.io/os": "linux",
    "kubernetes.io/arch": process.arch === "x64" ? "amd64" : process.arch,
    "node-role.kubernetes.io/control-plane": "",
    ...(options.nodeLabels ?? {}),
  };
  const runtimeClasses = new Set(options.runtimeClasses ?? []);
  store.setHooks(POD, {
    create(pod: KubeObject) {
      const spec = podSpecOf(pod);
      if (spec.runtimeClassName !== undefined && !runtimeClasses.has(spec.runtimeClassName)) {
        throw new KubeApiError(
          403,
          "Forbidden",
          `pods "${pod.metadata.name ?? pod.metadata.generateName ?? ""}" is forbidden: pod rejected: RuntimeClass "${spec.runtimeClassName}" not found`,
        );
      }
      admitPod(pod);
      const selector = spec.nodeSelector ?? {};
      const fits =
        Object.entries(selector).every(([key, value]) => nodeLabels[key] === value) &&
        (spec.nodeName === undefined || spec.nodeName === NODE_NAME);
      if (fits) spec.nodeName = NODE_NAME;
      else {
        pod.status = {
          ...(pod.status ?? {}),
          conditions: [
            {
              type: "PodScheduled",
              status: "False",
              reason: "Unschedulable",
              message:
                "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
              lastProbeTime: null,
              lastTransitionTime: new Date(clock.now()).toISOString().replace(/\.\d+Z$/, "Z"),
            },
          ],
        };
      }
    },
    update: admitPodUpdate,
    deletion: () => "graceful",
  });
  const stopNamespaces = manageNamespaces(store);
  manageServices(store);
  for (const name of [...BUILT_IN_NAMESPACES, ...(options.namespaces ?? [])]) {
    if (!store.get(NAMESPACE, undefined, name))
      store.create(NAMESPACE, undefined, { apiVersion: "v1", kind: "Namespace", metadata: { name } });
  }
  const nodeId = randomBytes(16).toString("hex");
  store.create(NODE, undefined, {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: NODE_NAME, labels: nodeLabels },
    spec: {},
    status: {
      conditions: [
        { type: "Ready", status: "True", reason: "KubeletReady", message: "kubelet is posting ready status" },
      ],
      addresses: [
        { type: "InternalIP", address: "127.0.0.1" },
        { type: "Hostname", address: NODE_NAME },
      ],
      // Every field the OpenAPI schema requires of NodeSystemInfo (client-node's models check them). The
      // ids are this emulator run's, not the host's; kubeProxyVersion is "" as on kubelets since 1.31.
      nodeInfo: {
        machineID: nodeId,
        systemUUID: `${nodeId.slice(0, 8)}-${nodeId.slice(8, 12)}-${nodeId.slice(12, 16)}-${nodeId.slice(16, 20)}-${nodeId.slice(20, 32)}`,
        bootID: randomBytes(16).toString("hex"),
        kernelVersion: "sbox-emulator",
        osImage: `sbox emulator (${backend.name} backend)`,
        kubeletVersion: "v1.32.0-sbox-emulator",
        kubeProxyVersion: "",
        operatingSystem: "linux",
        architecture: nodeLabels["kubernetes.io/arch"],
        containerRuntimeVersion: `sbox://${backend.name}`,
      },
    },
  });
  const kubelet = new Kubelet({
    store,
    backend,
    clock,
    nodeName: NODE_NAME,
    images: options.images ?? {},
    restartBackoffMs: options.restartBackoffMs ?? 10_000,
    pullBackoffMs: options.pullBackoffMs ?? 10_000,
    events,
    egressOf: (pod) => egressForPod(store, pod),
  });
  kubelet.start();
  const enforcesEgress = backend.provider.capabilities.egressControl !== "unsupported";
  const enforcesAllowLists = options.egressAllowLists ?? false;
  const stopPolicies = store.subscribe((event) => {
    if (event.definition !== NETWORK_POLICY) return;
    const namespace = event.object.metadata.namespace;
    for (const runtime of kubelet.all()) if (runtime.namespace === namespace) void runtime.applyEgress();
  });
  const stopAgents = manageAgentSandboxes(store, clock, events);
  const stopNodePorts = serveNodePorts(store, kubelet, backend, host, events);

  const certificate = selfSignedCertificate(host === "0.0.0.0" || host === "::" ? [] : [host]);
  const faults = createFaultInjector(options.faults);
  const log: RequestLogEntry[] = [];
  const bearer = (req: IncomingMessage): string | undefined => {
    const header = req.headers.authorization ?? "";
    return header.toLowerCase().startsWith("bearer ") ? header.slice(7).trim() : undefined;
  };
  const accepts = (token: string | undefined) =>
    token !== undefined && tokens.some((t) => sameToken(token, t));
  let serverUrl = "";
  const upgrades = streamingUpgrades({
    store,
    kubelet,
    backend,
    authorized: (req, wsToken) => accepts(bearer(req) ?? wsToken),
    logRequest(req, route, status) {
      log.push({
        method: req.method ?? "GET",
        path: (req.url ?? "/").split("?")[0]!,
        url: req.url ?? "/",
        route,
        status,
        at: new Date(),
      });
    },
  });
  let server: EmulatorHttpServer;
  try {
    server = await startHttpServer({
      name: "kubernetes api",
      host,
      port: options.port,
      faults,
      log,
      tls: certificate,
      errorBody: (status, message) =>
        new KubeApiError(status, status >= 500 ? "InternalError" : "BadRequest", message).toStatus(),
      handler: (req, res, ctx) =>
        serveKubernetesApi(
          {
            store,
            kubelet,
            serverAddress: () => new URL(serverUrl).host,
            now: () => clock.now(),
            authorized: (r) => accepts(bearer(r)),
            admissionWarnings: (definition, object) =>
              definition === NETWORK_POLICY
                ? admitNetworkPolicy(object, enforcesAllowLists, enforcesEgress)
                : [],
          },
          req,
          res,
          ctx.url,
          ctx.setRoute,
        ),
      onUpgrade: (req, socket, head) => {
        if (!upgrades(req, socket, head)) socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n");
      },
    });
  } catch (error) {
    stopAgents();
    await stopNodePorts();
    await kubelet.close();
    await backend.close().catch(() => undefined);
    throw error;
  }
  serverUrl = server.url;
  const token = tokens[0]!;
  const kubeconfig = kubeconfigYaml({
    server: server.url,
    caPem: certificate.cert,
    token,
    namespace: "default",
  });
  let closing: Promise<void> | undefined;
  return {
    url: server.url,
    kubeconfig,
    token,
    caPem: certificate.cert,
    env: {},
    backend: backend.name,
    faults,
    log,
    podNames: () => store.list(POD).map((p) => `${p.metadata.namespace}/${p.metadata.name}`),
    get machines() {
      return backend.machines;
    },
    close() {
      closing ??= (async () => {
        await server.close();
        await stopNodePorts();
        stopAgents();
        stopPolicies();
        stopNamespaces();
        await kubelet.close();
        await backend.close();
      })();
      return closing;
    },
  };
}
