/**
 * `ports.expose` through a Service, with `ports: { service: "NodePort" | "LoadBalancer" }`: one Service per
 * exposed port (`<id>-p<port>`, selecting the sandbox's pod by its `sbox.dev/sandbox` label, labelled as
 * the sandbox's so destroy removes it). A NodePort URL is `http://<nodeHost>:<nodePort>` (the node host
 * defaults to the API server's host); a LoadBalancer URL is its ingress address and the port, waited for
 * up to the create timeout (a cluster without a load-balancer controller never gives one: that is a
 * `Timeout` naming it). Unlike port-forward listeners, these outlive this process and are listed from
 * any client.
 */
import type { V1Service } from "@kubernetes/client-node";
import type { PortInfo } from "@sbox/core/spec";
import { abortedError, type KubernetesCluster } from "./kubernetes-cluster.js";
import { kubernetesError } from "./kubernetes-errors.js";
import { identityLabels } from "./kubernetes-labels.js";
import { SANDBOX_LABEL } from "./kubernetes-names.js";

function serviceName(sandbox: string, port: number): string {
  return `${sandbox}-p${port}`;
}

function status(error: unknown): number | undefined {
  const value = (error as { status?: unknown }).status;
  return typeof value === "number" ? value : undefined;
}

/** Exposed ports as Services. */
export class ServicePorts {
  constructor(
    private readonly cluster: KubernetesCluster,
    private readonly type: "NodePort" | "LoadBalancer",
    private readonly nodeHost: string | undefined,
  ) {}

  private async host(): Promise<string> {
    if (this.nodeHost) return this.nodeHost;
    return new URL((await this.cluster.apis()).server).hostname.replace(/^\[|\]$/g, "");
  }

  private async urlOf(service: V1Service, port: number, signal: AbortSignal): Promise<PortInfo> {
    const entry = service.spec?.ports?.find((p) => p.port === port);
    if (this.type === "NodePort") {
      if (!entry?.nodePort)
        throw kubernetesError(
          "Provider",
          `kubernetes expose: service ${service.metadata?.name} has no node port`,
        );
      const host = await this.host();
      return { port, url: `http://${host.includes(":") ? `[${host}]` : host}:${entry.nodePort}` };
    }
    const name = service.metadata?.name ?? "";
    const deadline = Date.now() + this.cluster.options.createTimeoutMs;
    let current = service;
    for (;;) {
      const ingress = current.status?.loadBalancer?.ingress?.[0];
      const address = ingress?.ip ?? ingress?.hostname;
      if (address) return { port, url: `http://${address.includes(":") ? `[${address}]` : address}:${port}` };
      if (signal.aborted) throw abortedError("expose", signal);
      if (Date.now() >= deadline) {
        throw kubernetesError(
          "Timeout",
          `kubernetes expose: load balancer service ${name} got no address within ${this.cluster.options.createTimeoutMs} ms (does the cluster have a load-balancer controller?)`,
          {
            retryable: true,
          },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      current = await this.cluster.call("read service", signal, (apis, options) =>
        apis.core.readNamespacedService({ name, namespace: apis.namespace }, options),
      );
    }
  }

  /** Creates (or finds) the Service of `port` and returns its URL. */
  async expose(
    sandbox: string,
    port: number,
    labels: Readonly<Record<string, string>>,
    signal: AbortSignal,
  ): Promise<PortInfo> {
    if (!Number.isInteger(port) || port < 1 || port > 65_535)
      throw kubernetesError("Validation", `invalid port ${String(port)}`);
    const name = serviceName(sandbox, port);
    let service = await this.cluster
      .call("read service", signal, (apis, options) =>
        apis.core.readNamespacedService({ name, namespace: apis.namespace }, options),
      )
      .catch((error: unknown) => {
        if (status(error) === 404) return undefined;
        throw error;
      });
    if (!service) {
      const body = {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name, labels: { ...identityLabels(labels), [SANDBOX_LABEL]: sandbox } },
        spec: {
          type: this.type,
          selector: { [SANDBOX_LABEL]: sandbox },
          ports: [{ name: `p${port}`, port, targetPort: port, protocol: "TCP" }],
        },
      };
      service = await this.cluster.call("create service", signal, (apis, options) =>
        apis.core.createNamespacedService({ namespace: apis.namespace, body: body as never }, options),
      );
    }
    return this.urlOf(service, port, signal);
  }

  /** The ports exposed for the sandbox (from any client). */
  async list(sandbox: string, signal: AbortSignal): Promise<PortInfo[]> {
    const services = await this.cluster.call("list services", signal, (apis, options) =>
      apis.core.listNamespacedService(
        { namespace: apis.namespace, labelSelector: `${SANDBOX_LABEL}=${sandbox}` },
        options,
      ),
    );
    const out: PortInfo[] = [];
    for (const service of services.items) {
      const port = service.spec?.ports?.[0]?.port;
      if (port === undefined) continue;
      out.push(await this.urlOf(service, port, signal).catch(() => ({ port, url: "" })));
    }
    return out.filter((p) => p.url !== "");
  }

  /** Deletes the Service of `port` (idempotent). */
  async unexpose(sandbox: string, port: number, signal: AbortSignal): Promise<void> {
    const name = serviceName(sandbox, port);
    await this.cluster
      .call("delete service", signal, (apis, options) =>
        apis.core.deleteNamespacedService({ name, namespace: apis.namespace }, options),
      )
      .catch((error: unknown) => {
        if (status(error) !== 404) throw error;
      });
  }

  /** Deletes every Service of the sandbox. */
  async closeSandbox(sandbox: string, signal: AbortSignal): Promise<void> {
    const services = await this.cluster.call("list services", signal, (apis, options) =>
      apis.core.listNamespacedService(
        { namespace: apis.namespace, labelSelector: `${SANDBOX_LABEL}=${sandbox}` },
        options,
      ),
    );
    for (const service of services.items) {
      const port = service.spec?.ports?.[0]?.port;
      if (port !== undefined) await this.unexpose(sandbox, port, signal);
    }
  }
}
