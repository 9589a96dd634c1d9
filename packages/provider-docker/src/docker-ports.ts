import { type PortInfo, SandboxError } from "@sbox/core/spec";
import type Dockerode from "dockerode";
import type { DockerEngine } from "./docker-engine.js";
import { inspectOurs } from "./docker-lifecycle.js";

function portsOf(engine: DockerEngine, info: Dockerode.ContainerInspectInfo): PortInfo[] {
  const published = (info.NetworkSettings.Ports ?? {}) as Record<
    string,
    { HostIp: string; HostPort: string }[] | null
  >;
  const result: PortInfo[] = [];
  for (const [key, bindings] of Object.entries(published)) {
    const [port, protocol] = key.split("/");
    const hostPort = bindings?.find((binding) => binding.HostPort)?.HostPort;
    if (protocol !== "tcp" || !hostPort) continue;
    result.push({ port: Number(port), url: `http://${engine.options.publicHost}:${hostPort}` });
  }
  return result.sort((a, b) => a.port - b.port);
}

/**
 * The URL of a port published at create (`spec.ports`, previewModel `declaredPorts`): Docker cannot
 * publish a port of a running container, so any other port is a `Validation` error saying so.
 */
export async function exposePort(
  engine: DockerEngine,
  container: Dockerode.Container,
  port: number,
  isPrivate: boolean,
  signal: AbortSignal,
): Promise<PortInfo> {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new SandboxError("Validation", `invalid port ${String(port)}`);
  }
  if (isPrivate) {
    throw new SandboxError("Validation", "the Docker provider has no private (token-protected) port URLs");
  }
  const info = await inspectOurs(engine, container, signal);
  const declared = Object.keys(info.HostConfig.PortBindings ?? {}).includes(`${port}/tcp`);
  if (!declared) {
    throw new SandboxError(
      "Validation",
      `port ${port} was not published when the sandbox was created: Docker publishes ports only at create, pass ports: [${port}] to create()`,
    );
  }
  const found = portsOf(engine, info).find((p) => p.port === port);
  if (!found) {
    throw new SandboxError(
      "InvalidState",
      `port ${port} has no host binding: the sandbox is not running or has no network`,
    );
  }
  return found;
}

/** Every published port with its URL. */
export async function listPorts(
  engine: DockerEngine,
  container: Dockerode.Container,
  signal: AbortSignal,
): Promise<PortInfo[]> {
  return portsOf(engine, await inspectOurs(engine, container, signal));
}
