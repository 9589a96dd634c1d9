import { randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import {
  type DriverSandboxInfo,
  type ListFilter,
  SandboxError,
  type SandboxSpec,
  type SandboxState,
} from "@sbox/core/spec";
import type Dockerode from "dockerode";
import { containerCreateOptions, validateDockerSpec } from "./docker-container-config.js";
import type { DockerEngine } from "./docker-engine.js";
import {
  EXPIRY_FILE,
  isOurs,
  LABEL_EXPIRES_AT,
  LABEL_FORK_IMAGE,
  LABEL_MANAGED,
  LABEL_META_PREFIX,
  labelFilters,
  metadataOf,
  parseExpiry,
} from "./docker-labels.js";
import { DEFAULT_IMAGE_ENV } from "./docker-options.js";
import { TarFirstEntryReader } from "./docker-tar.js";

/** A new sandbox id: the container name. Names (unlike container ids) survive a snapshot restore. */
export function newSandboxId(): string {
  return `sbox-${randomBytes(6).toString("hex")}`;
}

function isCode(error: unknown, code: string): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === code;
}

/** Maps Docker's container state onto the sandbox states. */
export function stateOf(status: string | undefined): SandboxState {
  switch (status) {
    case "running":
      return "running";
    case "paused":
      return "paused";
    case "created":
    case "exited":
      return "stopped";
    case "restarting":
      return "starting";
    case "removing":
      return "destroyed";
    case "dead":
      return "error";
    default:
      return "unknown";
  }
}

async function pullImage(engine: DockerEngine, image: string, signal: AbortSignal): Promise<void> {
  await engine.call(
    `pull ${image}`,
    signal,
    async (docker, bound) => {
      const stream = (await docker.pull(image, { abortSignal: bound })) as NodeJS.ReadableStream;
      await new Promise<void>((resolve, reject) => {
        docker.modem.followProgress(stream, (error: Error | null, events: { error?: string }[]) => {
          const failed = events?.find((event) => event.error);
          if (error) reject(error);
          else if (failed) reject(new Error(failed.error));
          else resolve();
        });
      });
    },
    engine.options.pullTimeoutMs,
  );
}

async function createContainer(
  engine: DockerEngine,
  options: Dockerode.ContainerCreateOptions,
  signal: AbortSignal,
): Promise<Dockerode.Container> {
  const image = options.Image ?? "";
  try {
    return await engine.call("create", signal, (docker, bound) =>
      docker.createContainer({ ...options, abortSignal: bound }),
    );
  } catch (error) {
    if (!isCode(error, "NotFound")) throw error;
    try {
      await pullImage(engine, image, signal);
    } catch (pullError) {
      throw new SandboxError(
        isCode(pullError, "Timeout") || isCode(pullError, "Aborted")
          ? (pullError as { code: "Timeout" }).code
          : "NotFound",
        `docker create: image ${image} is not on the engine and could not be pulled (${(pullError as Error).message}); use an image the engine has (spec.template, the image option or ${DEFAULT_IMAGE_ENV})`,
        { cause: pullError, retryable: false },
      );
    }
    return engine.call("create", signal, (docker, bound) =>
      docker.createContainer({ ...options, abortSignal: bound }),
    );
  }
}

/** Removes a container, ignoring "already gone"; never throws. */
export async function removeQuietly(engine: DockerEngine, container: Dockerode.Container): Promise<void> {
  await engine
    .call("remove", AbortSignal.timeout(engine.options.requestTimeoutMs), (_docker, bound) =>
      container.remove({ force: true, v: true, abortSignal: bound }),
    )
    .catch(() => undefined);
}

/**
 * Creates and starts a sandbox container; resolves once it runs. A failed start removes the container, so
 * a failed create leaves nothing behind.
 */
export async function createSandbox(
  engine: DockerEngine,
  spec: SandboxSpec,
  signal: AbortSignal,
  overrides: { image?: string | undefined; extraLabels?: Record<string, string> | undefined } = {},
): Promise<Dockerode.Container> {
  validateDockerSpec(spec);
  const id = newSandboxId();
  const image = overrides.image ?? spec.template ?? engine.options.image;
  const options = containerCreateOptions(spec, engine.options, id, image);
  if (overrides.extraLabels) options.Labels = { ...options.Labels, ...overrides.extraLabels };
  const container = await createContainer(engine, options, signal);
  try {
    await engine.call("start", signal, (_docker, bound) => container.start({ abortSignal: bound }));
  } catch (error) {
    await removeQuietly(engine, container);
    throw error;
  }
  const docker = await engine.docker();
  // Address the container by name from now on (see newSandboxId).
  return docker.getContainer(id);
}

/** Inspects a container and checks that it is one of ours; `NotFound` otherwise. */
export async function inspectOurs(
  engine: DockerEngine,
  container: Dockerode.Container,
  signal: AbortSignal,
): Promise<Dockerode.ContainerInspectInfo> {
  const info = await engine.call("inspect", signal, (_docker, bound) =>
    container.inspect({ abortSignal: bound }),
  );
  if (!isOurs(info.Config.Labels, engine.options.labels)) {
    throw new SandboxError("NotFound", `no sbox sandbox ${container.id} on this engine`);
  }
  return info;
}

/** Attaches to a sandbox by container name (or container id); `NotFound` when it is not one of ours. */
export async function connectSandbox(
  engine: DockerEngine,
  id: string,
  signal: AbortSignal,
): Promise<{ id: string; container: Dockerode.Container }> {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(id)) {
    throw new SandboxError("NotFound", `no sbox sandbox ${JSON.stringify(id)} on this engine`);
  }
  const docker = await engine.docker();
  const info = await inspectOurs(engine, docker.getContainer(id), signal);
  const name = info.Name.replace(/^\//, "");
  return { id: name, container: docker.getContainer(name) };
}

/** Reads the expiry written by setTimeout, if any. */
export async function readExpiryFile(
  engine: DockerEngine,
  container: Dockerode.Container,
  signal: AbortSignal,
): Promise<Date | undefined> {
  let response: IncomingMessage;
  try {
    response = (await engine.call("read expiry", signal, (_docker, bound) =>
      container.getArchive({ path: EXPIRY_FILE, abortSignal: bound }),
    )) as unknown as IncomingMessage;
  } catch (error) {
    if (isCode(error, "NotFound")) return undefined;
    throw error;
  }
  try {
    const reader = new TarFirstEntryReader(response as AsyncIterable<Buffer>);
    const entry = await reader.header();
    if (!entry || entry.size > 4096) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of reader.body()) chunks.push(chunk);
    return parseExpiry(Buffer.concat(chunks).toString("utf8"));
  } finally {
    response.destroy();
  }
}

function infoFrom(
  id: string,
  status: string | undefined,
  labels: Record<string, string> | null | undefined,
  createdAt: Date | undefined,
  expiresAt: Date | undefined,
  raw: unknown,
): DriverSandboxInfo {
  const info: DriverSandboxInfo = { id, state: stateOf(status), metadata: metadataOf(labels), raw };
  if (createdAt && !Number.isNaN(createdAt.getTime())) info.createdAt = createdAt;
  if (expiresAt) info.expiresAt = expiresAt;
  return info;
}

/** Live info of one sandbox; state `destroyed` once the container is gone. */
export async function sandboxInfo(
  engine: DockerEngine,
  id: string,
  container: Dockerode.Container,
  signal: AbortSignal,
): Promise<DriverSandboxInfo> {
  let info: Dockerode.ContainerInspectInfo;
  try {
    info = await inspectOurs(engine, container, signal);
  } catch (error) {
    if (isCode(error, "NotFound")) return { id, state: "destroyed", metadata: {} };
    throw error;
  }
  const expiresAt =
    (await readExpiryFile(engine, container, signal)) ?? parseExpiry(info.Config.Labels?.[LABEL_EXPIRES_AT]);
  return infoFrom(id, info.State.Status, info.Config.Labels, new Date(info.Created), expiresAt, info);
}

const LIST_CONCURRENCY = 8;

/** Lists our sandboxes, filtered by the engine on labels and again here on everything. */
export async function* listSandboxes(
  engine: DockerEngine,
  filter: ListFilter,
  signal: AbortSignal,
): AsyncGenerator<DriverSandboxInfo> {
  const labels = labelFilters(engine.options.labels);
  for (const [key, value] of Object.entries(filter.metadata ?? {})) {
    // Docker splits a filter at its first "=": keys containing one are filtered here only.
    if (!key.includes("=")) labels.push(`${LABEL_META_PREFIX}${key}=${value}`);
  }
  const containers = await engine.call("list", signal, (docker, bound) =>
    docker.listContainers({ all: true, filters: { label: labels }, abortSignal: bound }),
  );
  const docker = await engine.docker();
  const states =
    filter.state === undefined
      ? undefined
      : new Set(Array.isArray(filter.state) ? filter.state : [filter.state]);
  const limit = filter.limit ?? Number.POSITIVE_INFINITY;
  const wanted = containers
    .filter((c) => isOurs(c.Labels, engine.options.labels))
    .filter((c) => Object.entries(filter.metadata ?? {}).every(([k, v]) => metadataOf(c.Labels)[k] === v))
    .filter((c) => !states || states.has(stateOf(c.State)))
    .sort((a, b) => a.Created - b.Created);
  let emitted = 0;
  for (let start = 0; start < wanted.length && emitted < limit; start += LIST_CONCURRENCY) {
    const batch = wanted.slice(start, start + LIST_CONCURRENCY);
    const infos = await Promise.all(
      batch.map(async (c) => {
        const name = (c.Names[0] ?? c.Id).replace(/^\//, "");
        let partial: DriverSandboxInfo["partial"];
        const expiresAt = await readExpiryFile(engine, docker.getContainer(c.Id), signal).catch(
          (error: unknown) => {
            // Removed between the list and this read: skip it.
            if (isCode(error, "NotFound")) return null;
            // The list answered for this sandbox, only its expiry file did not: list it without one
            // (saying so) rather than fail the whole listing for one slow container.
            if (signal.aborted) throw error;
            const code = SandboxError.isInstance(error) ? error.code : "Provider";
            const reason = error instanceof Error ? error.message : String(error);
            partial = { fields: ["expiresAt"], code, reason };
            return undefined;
          },
        );
        if (expiresAt === null) return undefined;
        const info = infoFrom(
          name,
          c.State,
          c.Labels,
          new Date(c.Created * 1000),
          partial ? undefined : (expiresAt ?? parseExpiry(c.Labels[LABEL_EXPIRES_AT])),
          c,
        );
        return partial ? { ...info, partial } : info;
      }),
    );
    for (const info of infos) {
      if (!info || emitted >= limit) continue;
      emitted++;
      yield info;
    }
  }
}

/** Removes the container (and its anonymous volumes); resolves when it is already gone. */
export async function destroySandbox(
  engine: DockerEngine,
  container: Dockerode.Container,
  signal: AbortSignal,
): Promise<void> {
  let image: string | undefined;
  let forkImage = false;
  try {
    const info = await engine.call("inspect", signal, (_docker, bound) =>
      container.inspect({ abortSignal: bound }),
    );
    // Someone else's container under a reused name: not ours to remove.
    if (!isOurs(info.Config.Labels, engine.options.labels)) return;
    image = info.Image;
    forkImage = info.Config.Labels?.[LABEL_FORK_IMAGE] === "true";
  } catch (error) {
    if (isCode(error, "NotFound")) return;
    throw error;
  }
  try {
    await engine.call("remove", signal, (_docker, bound) =>
      container.remove({ force: true, v: true, abortSignal: bound }),
    );
  } catch (error) {
    if (isCode(error, "NotFound")) return;
    // "removal already in progress" answers 409: another caller is destroying it.
    if (!isCode(error, "Conflict") && !isCode(error, "InvalidState")) throw error;
  }
  if (image) await removeImageIfOrphan(engine, image, forkImage, signal);
}

/**
 * Removes the image a destroyed sandbox ran on when sbox made it and nobody can name it any more: a fork
 * image, or a snapshot image whose tag was deleted while this sandbox still used it. The engine refuses
 * while another container uses it, and the last one removes it.
 */
async function removeImageIfOrphan(
  engine: DockerEngine,
  image: string,
  forkImage: boolean,
  signal: AbortSignal,
): Promise<void> {
  const docker = await engine.docker();
  try {
    const info = await engine.call("inspect image", signal, () => docker.getImage(image).inspect());
    const ours = info.Config?.Labels?.[LABEL_MANAGED] === "true";
    if (!ours || (!forkImage && (info.RepoTags?.length ?? 0) > 0)) return;
    await engine.call("remove image", signal, (_d, bound) =>
      docker.getImage(image).remove({ abortSignal: bound }),
    );
  } catch {
    // Still in use, or already gone: nothing to do.
  }
}

/** Stops the container; its filesystem stays. */
export async function stopSandbox(
  engine: DockerEngine,
  container: Dockerode.Container,
  signal: AbortSignal,
): Promise<void> {
  const info = await inspectOurs(engine, container, signal);
  if (info.State.Status === "exited" || info.State.Status === "created") return;
  await engine.call("stop", signal, (_docker, bound) => container.stop({ t: 10, abortSignal: bound }));
}

/** Freezes every process of the container (cgroup freezer); memory stays. */
export async function pauseSandbox(
  engine: DockerEngine,
  container: Dockerode.Container,
  signal: AbortSignal,
): Promise<void> {
  const info = await inspectOurs(engine, container, signal);
  if (info.State.Status === "paused") return;
  if (info.State.Status !== "running") {
    throw new SandboxError(
      "InvalidState",
      `docker pause: the sandbox is ${stateOf(info.State.Status)}, not running`,
    );
  }
  await engine.pauseGate.pause(container.id, engine.options.requestTimeoutMs, () =>
    engine.call("pause", signal, (_docker, bound) => container.pause({ abortSignal: bound })),
  );
}

/** Brings a paused (unpause) or stopped (start) sandbox back; a running one is left alone. */
export async function resumeSandbox(
  engine: DockerEngine,
  container: Dockerode.Container,
  signal: AbortSignal,
): Promise<void> {
  // Resolves only once the engine reports the sandbox running: an unpause racing a pause still under
  // way in the engine (another caller) is repeated, a bounded number of times.
  for (let attempt = 0; attempt < 5; attempt++) {
    const info = await inspectOurs(engine, container, signal);
    const status = info.State.Status;
    if (status === "running") return;
    try {
      if (status === "paused") {
        await engine.call("unpause", signal, (_docker, bound) => container.unpause({ abortSignal: bound }));
      } else {
        await engine.call("start", signal, (_docker, bound) => container.start({ abortSignal: bound }));
      }
    } catch (error) {
      // "not paused" / "already started": the state changed under us; look again.
      if (!isCode(error, "InvalidState") && !isCode(error, "Conflict")) throw error;
    }
  }
  const info = await inspectOurs(engine, container, signal);
  if (info.State.Status !== "running") {
    throw new SandboxError(
      "InvalidState",
      `docker resume: the sandbox is still ${stateOf(info.State.Status)}`,
      {
        retryable: true,
      },
    );
  }
}
