import { type EgressPolicy, SandboxError } from "@sbox/core/spec";
import type Dockerode from "dockerode";
import type { DockerEngine } from "./docker-engine.js";
import { inspectOurs } from "./docker-lifecycle.js";

/**
 * Changes outbound access of a running sandbox. `block-all` disconnects the container from every network
 * (only loopback stays, as with `NetworkMode: none`); `allow-all` leaves `none` and joins the provider's
 * network again. Allow-lists are refused: Docker alone cannot enforce them.
 */
export async function setEgress(
  engine: DockerEngine,
  container: Dockerode.Container,
  policy: EgressPolicy,
  signal: AbortSignal,
): Promise<void> {
  if (policy !== "allow-all" && policy !== "block-all") {
    throw new SandboxError(
      "Validation",
      "egress allow-lists are not enforced by the Docker provider (it can only block all or allow all outbound traffic)",
    );
  }
  const info = await inspectOurs(engine, container, signal);
  const docker = await engine.docker();
  const joined = Object.keys(info.NetworkSettings.Networks ?? {});
  const id = info.Id;
  if (policy === "block-all") {
    for (const name of joined) {
      if (name === "none") continue;
      await engine.call(`network disconnect ${name}`, signal, (_d, bound) =>
        docker.getNetwork(name).disconnect({ Container: id, Force: true, abortSignal: bound }),
      );
    }
    return;
  }
  const target = engine.options.network;
  if (joined.includes(target)) return;
  if (joined.includes("none")) {
    await engine.call("network disconnect none", signal, (_d, bound) =>
      docker.getNetwork("none").disconnect({ Container: id, Force: true, abortSignal: bound }),
    );
  }
  await engine.call(`network connect ${target}`, signal, (_d, bound) =>
    docker
      .getNetwork(target)
      .connect({ Container: id, abortSignal: bound } as Dockerode.NetworkConnectOptions),
  );
}
