import { randomBytes } from "node:crypto";
import { SandboxError, type SnapshotRef } from "@sbox/core/spec";
import type Dockerode from "dockerode";
import type { DockerEngine } from "./docker-engine.js";
import { writeFile } from "./docker-files.js";
import {
  EXPIRY_FILE,
  LABEL_FORK_IMAGE,
  LABEL_FORKED_FROM,
  LABEL_MANAGED,
  LABEL_SNAPSHOT_NAME,
  LABEL_SNAPSHOT_OF,
} from "./docker-labels.js";
import { inspectOurs, newSandboxId, readExpiryFile, removeQuietly } from "./docker-lifecycle.js";

/** Repository of snapshot images: `sbox-snapshot:<sandbox>-<random>`. */
export const SNAPSHOT_REPOSITORY = "sbox-snapshot";
/** Repository of the images forks start from. */
export const FORK_REPOSITORY = "sbox-fork";

function isCode(error: unknown, code: string): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === code;
}

async function commit(
  engine: DockerEngine,
  container: Dockerode.Container,
  repository: string,
  tag: string,
  labels: Record<string, string>,
  signal: AbortSignal,
): Promise<string> {
  const changes = Object.entries(labels).map(([key, value]) => `LABEL ${key}=${JSON.stringify(value)}`);
  const info = await inspectOurs(engine, container, signal);
  // The filesystem only: running processes are frozen for the copy (pause) and not part of the image.
  const result = (await engine.call(
    "commit",
    signal,
    (_docker, bound) =>
      container.commit({
        _query: { container: info.Id, repo: repository, tag, pause: true, changes },
        _body: {},
        abortSignal: bound,
      } as object),
    Math.max(engine.options.requestTimeoutMs, 300_000),
  )) as { Id?: string };
  if (!result?.Id)
    throw new SandboxError("Provider", "docker commit: the engine returned no image id", {
      retryable: true,
    });
  return `${repository}:${tag}`;
}

/** `docker commit` of the sandbox into `sbox-snapshot:<id>-<random>`; the reference is also a valid `template`. */
export async function createSnapshot(
  engine: DockerEngine,
  container: Dockerode.Container,
  id: string,
  name: string | undefined,
  signal: AbortSignal,
): Promise<SnapshotRef> {
  const createdAt = new Date();
  const tag = `${id}-${randomBytes(4).toString("hex")}`;
  const reference = await commit(
    engine,
    container,
    SNAPSHOT_REPOSITORY,
    tag,
    {
      [LABEL_SNAPSHOT_OF]: id,
      [LABEL_SNAPSHOT_NAME]: name === undefined ? "" : encodeURIComponent(name),
      [LABEL_FORK_IMAGE]: "",
      [LABEL_MANAGED]: "true",
    },
    signal,
  );
  const ref: SnapshotRef = { id: reference, createdAt };
  if (name !== undefined) ref.name = name;
  return ref;
}

/** Snapshots taken of sandbox `id`, oldest first. */
export async function listSnapshots(
  engine: DockerEngine,
  id: string,
  signal: AbortSignal,
): Promise<SnapshotRef[]> {
  const images = await engine.call("list snapshots", signal, (docker, bound) =>
    docker.listImages({ filters: { label: [`${LABEL_SNAPSHOT_OF}=${id}`] }, abortSignal: bound }),
  );
  const refs: SnapshotRef[] = [];
  for (const image of images) {
    const reference = (image.RepoTags ?? []).find((tag) => tag.startsWith(`${SNAPSHOT_REPOSITORY}:`));
    if (!reference) continue;
    const ref: SnapshotRef = { id: reference, createdAt: new Date(image.Created * 1000) };
    const name = image.Labels?.[LABEL_SNAPSHOT_NAME];
    if (name) ref.name = decodeURIComponent(name);
    refs.push(ref);
  }
  return refs.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
}

async function snapshotImage(
  engine: DockerEngine,
  ref: SnapshotRef,
  signal: AbortSignal,
): Promise<Dockerode.ImageInspectInfo> {
  const docker = await engine.docker();
  // Image inspect takes no abort signal in dockerode; the call is still bounded.
  const info = await engine.call("inspect snapshot", signal, () => docker.getImage(ref.id).inspect());
  if (!info.Config?.Labels?.[LABEL_SNAPSHOT_OF]) {
    throw new SandboxError("NotFound", `no sbox snapshot ${ref.id}`);
  }
  return info;
}

/** Deletes a snapshot image; resolves when it is already gone. */
export async function deleteSnapshot(
  engine: DockerEngine,
  ref: SnapshotRef,
  signal: AbortSignal,
): Promise<void> {
  try {
    await snapshotImage(engine, ref, signal);
  } catch (error) {
    if (isCode(error, "NotFound")) return;
    throw error;
  }
  const docker = await engine.docker();
  // Force only untags an image a sandbox still runs on; that sandbox's destroy removes it.
  await engine.call("delete snapshot", signal, (_d, bound) =>
    docker.getImage(ref.id).remove({ force: true, abortSignal: bound }),
  );
}

/** Create options that copy an existing container onto another image under another name. */
function copyOptions(
  info: Dockerode.ContainerInspectInfo,
  name: string,
  image: string,
  labels: Record<string, string>,
): Dockerode.ContainerCreateOptions {
  const config = info.Config;
  const options: Dockerode.ContainerCreateOptions = {
    name,
    Image: image,
    Env: config.Env ?? [],
    Labels: { ...(config.Labels ?? {}), ...labels },
    ExposedPorts: config.ExposedPorts ?? {},
    WorkingDir: config.WorkingDir,
    Tty: false,
    OpenStdin: false,
    HostConfig: info.HostConfig,
  };
  if (config.Entrypoint) options.Entrypoint = config.Entrypoint as string[];
  if (config.Cmd) options.Cmd = config.Cmd;
  if (config.User) options.User = config.User;
  return options;
}

async function createStarted(
  engine: DockerEngine,
  options: Dockerode.ContainerCreateOptions,
  networksOff: boolean,
  signal: AbortSignal,
): Promise<Dockerode.Container> {
  const docker = await engine.docker();
  const container = await engine.call("create", signal, (d, bound) =>
    d.createContainer({ ...options, abortSignal: bound }),
  );
  try {
    if (networksOff) {
      // The source was cut off with setEgress("block-all"): so is the copy.
      const info = await engine.call("inspect", signal, (_d, bound) =>
        container.inspect({ abortSignal: bound }),
      );
      for (const network of Object.keys(info.NetworkSettings.Networks ?? {})) {
        if (network === "none") continue;
        await engine.call("network disconnect", signal, (_d, bound) =>
          docker.getNetwork(network).disconnect({ Container: info.Id, Force: true, abortSignal: bound }),
        );
      }
    }
    await engine.call("start", signal, (_d, bound) => container.start({ abortSignal: bound }));
  } catch (error) {
    await removeQuietly(engine, container);
    throw error;
  }
  return container;
}

function networksOff(info: Dockerode.ContainerInspectInfo): boolean {
  return (
    info.HostConfig.NetworkMode !== "none" && Object.keys(info.NetworkSettings.Networks ?? {}).length === 0
  );
}

/**
 * Puts the sandbox back to a snapshot's filesystem. A container's filesystem cannot be swapped in place,
 * so a new container is made from the snapshot image with the same configuration, the old one is removed
 * and the new one takes its name (the sandbox id). Processes do not survive; published ports get new
 * host ports; a call from another client during the swap may briefly see `NotFound`.
 */
export async function restoreSnapshot(
  engine: DockerEngine,
  container: Dockerode.Container,
  id: string,
  ref: SnapshotRef,
  signal: AbortSignal,
): Promise<void> {
  await snapshotImage(engine, ref, signal);
  const info = await inspectOurs(engine, container, signal);
  const expiry = await readExpiryFile(engine, container, signal);
  const temporary = `${id}-restore-${randomBytes(3).toString("hex")}`;
  const replacement = await createStarted(
    engine,
    copyOptions(info, temporary, ref.id, {}),
    networksOff(info),
    signal,
  );
  try {
    if (expiry)
      await writeFile(engine, replacement, EXPIRY_FILE, Buffer.from(expiry.toISOString()), 0o600, signal);
    await engine.call("remove", signal, (_d, bound) =>
      container.remove({ force: true, v: true, abortSignal: bound }),
    );
  } catch (error) {
    await removeQuietly(engine, replacement);
    throw error;
  }
  await engine.call("rename", signal, (_d, bound) => replacement.rename({ name: id, abortSignal: bound }));
  if (info.State.Status === "exited" || info.State.Status === "created") {
    await engine.call("stop", signal, (_d, bound) => container.stop({ t: 10, abortSignal: bound }));
  }
}

/**
 * `count` independent copies of a sandbox's filesystem: one commit, then one container per copy with the
 * same configuration and metadata. The image is removed with the last fork. Named volumes are shared,
 * as Docker mounts the same volume into every copy.
 */
export async function forkSandbox(
  engine: DockerEngine,
  container: Dockerode.Container,
  id: string,
  count: number,
  signal: AbortSignal,
): Promise<{ id: string; container: Dockerode.Container }[]> {
  if (!Number.isInteger(count) || count < 1 || count > 100) {
    throw new SandboxError("Validation", `invalid fork count ${String(count)}: 1..100`);
  }
  const info = await inspectOurs(engine, container, signal);
  const image = await commit(
    engine,
    container,
    FORK_REPOSITORY,
    `${id}-${randomBytes(4).toString("hex")}`,
    { [LABEL_FORK_IMAGE]: "true", [LABEL_MANAGED]: "true" },
    signal,
  );
  const docker = await engine.docker();
  const made: { id: string; container: Dockerode.Container }[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const name = newSandboxId();
      await createStarted(
        engine,
        copyOptions(info, name, image, { [LABEL_FORKED_FROM]: id, [LABEL_FORK_IMAGE]: "true" }),
        networksOff(info),
        signal,
      );
      made.push({ id: name, container: docker.getContainer(name) });
    }
  } catch (error) {
    for (const fork of made) await removeQuietly(engine, fork.container);
    await engine
      .call("remove fork image", AbortSignal.timeout(engine.options.requestTimeoutMs), (_d, bound) =>
        docker.getImage(image).remove({ abortSignal: bound }),
      )
      .catch(() => undefined);
    throw error;
  }
  return made;
}
