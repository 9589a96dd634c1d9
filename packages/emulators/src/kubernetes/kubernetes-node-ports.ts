/**
 * The emulated node's kube-proxy, for `NodePort` (and `LoadBalancer`) services: every allocated node port
 * is a listener on the emulator's address, and each connection goes to the target port of a running pod
 * the service's selector picks (a named `targetPort` is looked up in the pod's container ports), through
 * the same in-pod relay as port-forward. A port the host cannot bind is reported as a Warning event on
 * the service. Load balancers get no address (as on a cluster without a load-balancer controller): their
 * node ports work, their `status.loadBalancer` stays empty.
 */
import { createServer, type Server, type Socket } from "node:net";
import type { EmulatorBackend } from "../backend.js";
import type { EventRecorder } from "./kubernetes-events.js";
import type { Kubelet } from "./kubernetes-kubelet.js";
import type { KubeObject } from "./kubernetes-objects.js";
import { podSpecOf } from "./kubernetes-pod-admission.js";
import { connectToPod } from "./kubernetes-pod-connection.js";
import { POD, SERVICE } from "./kubernetes-resources.js";
import { labelSelectorObject } from "./kubernetes-selectors.js";
import { servicePorts } from "./kubernetes-services.js";
import type { KubernetesStore } from "./kubernetes-store.js";

interface Listener {
  readonly server: Server;
  readonly sockets: Set<Socket>;
}

/** Serves node ports on `host`; returns the function that closes every listener. */
export function serveNodePorts(
  store: KubernetesStore,
  kubelet: Kubelet,
  backend: EmulatorBackend,
  host: string,
  events: EventRecorder,
): () => Promise<void> {
  const listeners = new Map<string, Listener>();
  const key = (service: KubeObject, nodePort: number) => `${service.metadata.uid}/${nodePort}`;

  const targetOf = (service: KubeObject, servicePort: number) => {
    const selector = ((service.spec ?? {}) as { selector?: Record<string, string> }).selector;
    if (!selector || Object.keys(selector).length === 0) return undefined;
    const matches = labelSelectorObject({ matchLabels: selector });
    const port = servicePorts(service).find((p) => p.port === servicePort);
    for (const pod of store.list(POD, service.metadata.namespace)) {
      if (!matches(pod.metadata.labels ?? {}) || pod.metadata.deletionTimestamp) continue;
      const runtime = kubelet.runtime(pod.metadata.namespace ?? "default", pod.metadata.name ?? "");
      if (!runtime?.running || !runtime.sandbox) continue;
      let target = port?.targetPort ?? servicePort;
      if (typeof target === "string") {
        const named = (podSpecOf(pod).containers[0]?.ports ?? []).find((p) => p.name === target);
        if (!named) continue;
        target = named.containerPort;
      }
      return { sandbox: runtime.sandbox, port: target };
    }
    return undefined;
  };

  const open = (service: KubeObject, servicePort: number, nodePort: number) => {
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      const current = store.get(SERVICE, service.metadata.namespace, service.metadata.name ?? "");
      const target = current ? targetOf(current, servicePort) : undefined;
      if (!target) {
        socket.destroy();
        return;
      }
      const connection = connectToPod(backend, target.sandbox, target.port, (chunk) => {
        socket.write(chunk);
      });
      socket.on("data", (chunk: Buffer) => void connection.write(chunk));
      socket.on("end", () => void connection.end());
      socket.on("close", () => connection.close());
      socket.on("error", () => connection.close());
      void connection.done.then(() => socket.end());
    });
    server.on("error", (error) => {
      events(
        service,
        "Warning",
        "NodePortUnavailable",
        `node port ${nodePort} cannot be served on ${host}: ${error.message}`,
        "kube-proxy",
      );
      listeners.delete(key(service, nodePort));
    });
    server.listen(nodePort, host);
    server.unref();
    listeners.set(key(service, nodePort), { server, sockets });
  };

  const close = (id: string) => {
    const listener = listeners.get(id);
    if (!listener) return;
    listeners.delete(id);
    for (const socket of listener.sockets) socket.destroy();
    listener.server.close();
  };

  const unsubscribe = store.subscribe((event) => {
    if (event.definition !== SERVICE) return;
    const service = event.object;
    const wanted = new Set<string>();
    if (event.type !== "DELETED") {
      for (const p of servicePorts(service)) {
        if (typeof p.nodePort !== "number") continue;
        const id = key(service, p.nodePort);
        wanted.add(id);
        if (!listeners.has(id)) open(service, p.port, p.nodePort);
      }
    }
    for (const id of [...listeners.keys()]) {
      if (id.startsWith(`${service.metadata.uid}/`) && !wanted.has(id)) close(id);
    }
  });
  return async () => {
    unsubscribe();
    for (const id of [...listeners.keys()]) close(id);
  };
}
