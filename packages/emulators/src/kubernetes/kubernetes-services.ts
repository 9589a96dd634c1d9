/**
 * Services: the API server's allocations — a ClusterIP from the service range for `ClusterIP`,
 * `NodePort` and `LoadBalancer` services (`None` stays headless), node ports from 30000–32767 for
 * `NodePort` and `LoadBalancer` — and its validation (ports required unless headless, a known type).
 */
import type { KubeObject } from "./kubernetes-objects.js";
import { SERVICE } from "./kubernetes-resources.js";
import { invalid } from "./kubernetes-status.js";
import type { KubernetesStore } from "./kubernetes-store.js";

interface ServicePort {
  name?: string;
  port: number;
  targetPort?: number | string;
  nodePort?: number;
  protocol?: string;
}

/** The ports of a service. */
export function servicePorts(service: KubeObject): ServicePort[] {
  return ((service.spec ?? {}) as { ports?: ServicePort[] }).ports ?? [];
}

/** Installs service admission on `store`. */
export function manageServices(store: KubernetesStore): void {
  let nextIP = 10;
  const usedNodePorts = () =>
    new Set(
      store.list(SERVICE).flatMap((s) =>
        servicePorts(s)
          .map((p) => p.nodePort)
          .filter((p): p is number => typeof p === "number"),
      ),
    );
  store.setHooks(SERVICE, {
    create(service) {
      const spec = (service.spec ?? {}) as Record<string, unknown> & {
        type?: string;
        clusterIP?: string;
        ports?: ServicePort[];
      };
      const name = service.metadata.name ?? "";
      spec.type ??= "ClusterIP";
      if (!["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"].includes(spec.type)) {
        throw invalid("Service", "", name, [
          {
            field: "spec.type",
            message: `Unsupported value: "${spec.type}"`,
            reason: "FieldValueNotSupported",
          },
        ]);
      }
      const ports = spec.ports ?? [];
      if (ports.length === 0 && spec.clusterIP !== "None" && spec.type !== "ExternalName") {
        throw invalid("Service", "", name, [
          { field: "spec.ports", message: "Required value", reason: "FieldValueRequired" },
        ]);
      }
      const used = usedNodePorts();
      ports.forEach((p, i) => {
        if (!Number.isInteger(p.port) || p.port < 1 || p.port > 65_535) {
          throw invalid("Service", "", name, [
            {
              field: `spec.ports[${i}].port`,
              message: `Invalid value: ${p.port}: must be between 1 and 65535, inclusive`,
            },
          ]);
        }
        p.protocol ??= "TCP";
        p.targetPort ??= p.port;
        if (spec.type === "NodePort" || spec.type === "LoadBalancer") {
          if (p.nodePort === undefined) {
            let candidate = 30_000 + Math.floor(Math.random() * 2_768);
            while (used.has(candidate)) candidate = candidate >= 32_767 ? 30_000 : candidate + 1;
            p.nodePort = candidate;
          } else if (p.nodePort < 30_000 || p.nodePort > 32_767 || used.has(p.nodePort)) {
            throw invalid("Service", "", name, [
              {
                field: `spec.ports[${i}].nodePort`,
                message: `Invalid value: ${p.nodePort}: provided port is already allocated or outside 30000-32767`,
              },
            ]);
          }
          used.add(p.nodePort);
        }
      });
      if (spec.type !== "ExternalName" && spec.clusterIP !== "None") {
        const n = nextIP++;
        spec.clusterIP = `10.96.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`;
        spec.clusterIPs = [spec.clusterIP];
      }
      spec.sessionAffinity ??= "None";
      service.spec = spec;
      service.status = { loadBalancer: {} };
    },
  });
}
