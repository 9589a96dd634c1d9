import { SandboxError, type SandboxSpec } from "@sbox/core/spec";
import type { FlyCreateMachineRequest, FlyMachineConfig, FlyMachineService } from "./fly-api-types.js";
import { FLY_IDEMPOTENCY_METADATA_KEY, FLY_MANAGED_METADATA_KEY } from "./fly-names.js";
import type { ResolvedFlyOptions } from "./fly-options.js";

/**
 * What the machine runs as its main process: a shell that sleeps until it is told to stop, so that the
 * machine stays `started` whatever the image's own command is, and exits at once on SIGINT/SIGTERM (Fly
 * stops machines with SIGINT by default).
 */
export const FLY_KEEPALIVE_INIT: readonly string[] = [
  "/bin/sh",
  "-c",
  "trap 'exit 0' INT TERM; while :; do sleep 3600 & wait $!; done",
];

/**
 * The Fly services that publish `ports`: each internal port is offered by the Fly Proxy on the same
 * port number, with TLS and HTTP handlers, so `https://{app}.fly.dev:{port}` reaches it.
 */
export function servicesForPorts(ports: readonly number[]): FlyMachineService[] {
  return ports.map((port) => ({
    protocol: "tcp",
    internal_port: port,
    ports: [{ port, handlers: ["tls", "http"] }],
    autostart: false,
    autostop: "off",
  }));
}

/** The ports a machine publishes: the internal ports of its services that the proxy offers on a port. */
export function publishedPorts(config: FlyMachineConfig | undefined): number[] {
  const out: number[] = [];
  for (const service of config?.services ?? []) {
    if (service.protocol !== "tcp") continue;
    if ((service.ports ?? []).some((p) => p.port === service.internal_port)) out.push(service.internal_port);
  }
  return out;
}

/**
 * Builds the body of the create call from a spec the core has already validated against `honours`. Fly's
 * own limits are checked here so they fail before any call: whole CPUs, memory in multiples of 256 MiB.
 */
export function createMachineRequest(
  spec: SandboxSpec,
  options: ResolvedFlyOptions,
): FlyCreateMachineRequest {
  const config: FlyMachineConfig = {
    image: spec.template ?? options.image,
    init: { exec: [...FLY_KEEPALIVE_INIT] },
    restart: { policy: "no" },
    auto_destroy: false,
    metadata: { ...(spec.metadata ?? {}), [FLY_MANAGED_METADATA_KEY]: "true" },
  };
  if (spec.idempotencyKey !== undefined && config.metadata) {
    config.metadata[FLY_IDEMPOTENCY_METADATA_KEY] = spec.idempotencyKey;
  }
  if (spec.env !== undefined && Object.keys(spec.env).length > 0) config.env = { ...spec.env };
  const resources = spec.resources;
  if (resources?.vcpus !== undefined || resources?.memoryMB !== undefined) {
    config.guest = { cpu_kind: options.cpuKind, cpus: 1, memory_mb: 256 };
    if (resources.vcpus !== undefined) {
      if (!Number.isInteger(resources.vcpus) || resources.vcpus < 1) {
        throw new SandboxError(
          "Validation",
          `resources.vcpus must be a whole number of CPUs on Fly, got ${resources.vcpus}`,
        );
      }
      config.guest.cpus = resources.vcpus;
    }
    if (resources.memoryMB !== undefined) {
      if (
        !Number.isInteger(resources.memoryMB) ||
        resources.memoryMB < 256 ||
        resources.memoryMB % 256 !== 0
      ) {
        throw new SandboxError(
          "Validation",
          `resources.memoryMB must be a multiple of 256 (at least 256) on Fly, got ${resources.memoryMB}`,
        );
      }
      config.guest.memory_mb = resources.memoryMB;
    }
  }
  if (spec.ports !== undefined && spec.ports.length > 0) {
    for (const port of spec.ports) {
      if (!Number.isInteger(port) || port < 1 || port > 65535) {
        throw new SandboxError("Validation", `ports must be TCP port numbers (1-65535), got ${String(port)}`);
      }
    }
    config.services = servicesForPorts([...new Set(spec.ports)]);
  }
  const body: FlyCreateMachineRequest = { config };
  if (spec.name !== undefined) body.name = spec.name;
  const region = spec.region ?? options.region;
  if (region !== undefined) body.region = region;
  return body;
}
