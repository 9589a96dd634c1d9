import { SandboxError, type SandboxSpec } from "@sbox/core/spec";
import type Dockerode from "dockerode";
import { sandboxLabels } from "./docker-labels.js";
import type { ResolvedDockerOptions } from "./docker-options.js";

/**
 * What keeps a sandbox container alive: an idle process under Docker's init (`HostConfig.Init`), which
 * forwards SIGTERM so `stop` is quick. The image's own entrypoint is not run.
 */
export const KEEPALIVE_ENTRYPOINT: readonly string[] = ["sleep"];
/** Argument of the keep-alive process: about 68 years, accepted by GNU and busybox `sleep`. */
export const KEEPALIVE_CMD: readonly string[] = ["2147483647"];

function invalid(message: string): Error {
  return new SandboxError("Validation", message);
}

/** Docker-specific checks of a spec, before any engine call. */
export function validateDockerSpec(spec: SandboxSpec): void {
  const egress = spec.network?.egress;
  if (egress !== undefined && egress !== "allow-all" && egress !== "block-all") {
    throw invalid(
      "network.egress allow-lists are not enforced by the Docker provider (it can only block all or allow all outbound traffic)",
    );
  }
  for (const port of spec.ports ?? []) {
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw invalid(`invalid port ${String(port)}`);
  }
  if (egress === "block-all" && (spec.ports?.length ?? 0) > 0) {
    throw invalid("ports cannot be published when network.egress is block-all (the sandbox has no network)");
  }
  const resources = spec.resources;
  if (resources?.vcpus !== undefined && !(resources.vcpus > 0 && resources.vcpus <= 1024)) {
    throw invalid(`invalid resources.vcpus ${String(resources.vcpus)}`);
  }
  if (
    resources?.memoryMB !== undefined &&
    !(Number.isFinite(resources.memoryMB) && resources.memoryMB >= 6)
  ) {
    throw invalid(`invalid resources.memoryMB ${String(resources.memoryMB)}: Docker needs at least 6 MiB`);
  }
  if (spec.ttlMs !== undefined && !(Number.isFinite(spec.ttlMs) && spec.ttlMs > 0)) {
    throw invalid(`invalid ttlMs ${String(spec.ttlMs)}`);
  }
  for (const volume of spec.volumes ?? []) {
    if (!volume.name || !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(volume.name)) {
      throw invalid(`invalid volume name ${JSON.stringify(volume.name)}`);
    }
    if (!volume.mountPath?.startsWith("/"))
      throw invalid(`volume mountPath must be absolute, got ${JSON.stringify(volume.mountPath)}`);
  }
  if (spec.template !== undefined && (typeof spec.template !== "string" || spec.template.trim() === "")) {
    throw invalid("template must be a non-empty image reference");
  }
}

/** The create options of a new sandbox container named `id`. */
export function containerCreateOptions(
  spec: SandboxSpec,
  options: ResolvedDockerOptions,
  id: string,
  image: string,
  now: number = Date.now(),
): Dockerode.ContainerCreateOptions {
  const ports = [...new Set(spec.ports ?? [])];
  const exposed: Record<string, object> = {};
  const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
  for (const port of ports) {
    exposed[`${port}/tcp`] = {};
    // An empty HostPort lets the engine pick a free port.
    bindings[`${port}/tcp`] = [{ HostIp: options.publishAddress, HostPort: "" }];
  }
  const hostConfig: Dockerode.HostConfig = {
    Init: true,
    PidsLimit: options.pidsLimit,
    NetworkMode: spec.network?.egress === "block-all" ? "none" : options.network,
    PortBindings: bindings,
  };
  if (spec.resources?.memoryMB !== undefined) {
    const bytes = Math.floor(spec.resources.memoryMB * 1024 * 1024);
    hostConfig.Memory = bytes;
    // Same as Memory: no swap on top, so the limit is the limit.
    hostConfig.MemorySwap = bytes;
  }
  if (spec.resources?.vcpus !== undefined) hostConfig.NanoCpus = Math.round(spec.resources.vcpus * 1e9);
  if (spec.volumes?.length) {
    hostConfig.Mounts = spec.volumes.map((volume) => ({
      Type: "volume" as const,
      Source: volume.name,
      Target: volume.mountPath,
      ReadOnly: volume.readOnly ?? false,
    }));
  }
  return {
    name: id,
    Image: image,
    Entrypoint: [...KEEPALIVE_ENTRYPOINT],
    Cmd: [...KEEPALIVE_CMD],
    Env: Object.entries(spec.env ?? {}).map(([key, value]) => `${key}=${value}`),
    Labels: sandboxLabels({
      extra: options.labels,
      metadata: spec.metadata ?? {},
      name: spec.name,
      expiresAt: spec.ttlMs !== undefined ? new Date(now + spec.ttlMs) : undefined,
    }),
    ExposedPorts: exposed,
    Tty: false,
    OpenStdin: false,
    HostConfig: hostConfig,
  };
}
