import {
  type DriverCommand,
  type DriverExecRequest,
  type DriverSandbox,
  defineProvider,
  SandboxError,
  type SandboxProvider,
} from "@sbox/core/spec";
import type Dockerode from "dockerode";
import {
  type DockerCapabilities,
  type DockerHonouredField,
  dockerCapabilities,
  dockerFlags,
  dockerHonours,
} from "./docker-capabilities.js";
import { DockerEngine } from "./docker-engine.js";
import { toDockerError } from "./docker-errors.js";
import { runExec, runHelper } from "./docker-exec.js";
import { readFile, readFileStream, statFile, writeFile, writeFileStream } from "./docker-files.js";
import { killPidCommand } from "./docker-kill.js";
import { DOCKER_PROVIDER_NAME, EXPIRY_FILE } from "./docker-labels.js";
import {
  connectSandbox,
  createSandbox,
  destroySandbox,
  inspectOurs,
  listSandboxes,
  pauseSandbox,
  resumeSandbox,
  sandboxInfo,
  stopSandbox,
} from "./docker-lifecycle.js";
import { DockerMetrics } from "./docker-metrics.js";
import { setEgress } from "./docker-network.js";
import { type DockerProviderOptions, resolveDockerOptions } from "./docker-options.js";
import { exposePort, listPorts } from "./docker-ports.js";
import { createPty } from "./docker-pty.js";
import {
  createSnapshot,
  deleteSnapshot,
  forkSandbox,
  listSnapshots,
  restoreSnapshot,
} from "./docker-snapshots.js";

/** What `sandbox.raw()` returns for a Docker sandbox: the dockerode container (addressed by name). */
export type DockerSandboxNative = Dockerode.Container;

/**
 * The Docker provider type. It says what the capability map cannot: Docker publishes ports for the
 * container's life, so there is no `doUnexposePort` (`sandbox.ports.unexpose` does not type-check), and
 * which spec fields it honours (others fail to type-check in `create`).
 */
export type DockerProvider = SandboxProvider<DockerCapabilities, DockerSandboxNative> & {
  readonly doUnexposePort?: undefined;
  readonly honours: readonly DockerHonouredField[];
};

function argvOf(command: DriverCommand): string[] {
  if ("shell" in command) return ["sh", "-c", command.shell];
  if (command.argv.length === 0) {
    throw new SandboxError("Validation", "a command needs at least one word");
  }
  for (const word of command.argv) {
    if (word.includes("\0")) throw new SandboxError("Validation", "a command word cannot contain NUL");
  }
  return [...command.argv];
}

function execInput(request: DriverExecRequest) {
  return {
    cmd: argvOf(request.command),
    env: request.env,
    cwd: request.cwd,
    user: request.user,
    stdin: request.stdin,
    signal: request.signal,
    onStarted: request.onStarted,
  };
}

/**
 * The Docker provider: sandboxes are labelled containers on a Docker Engine, driven through dockerode
 * (loaded on first use). Works with the local socket, `DOCKER_HOST`, or explicit `socketPath` / `host`.
 *
 * ```ts
 * const client = createSandboxClient({ provider: docker({ image: "sbox-busybox:latest" }) });
 * ```
 */
export function docker(options: DockerProviderOptions = {}): DockerProvider {
  const engine = new DockerEngine(options, resolveDockerOptions(options));
  const metrics = new DockerMetrics();
  const sandbox = (id: string, container: Dockerode.Container): DriverSandbox<DockerSandboxNative> => ({
    id,
    native: container,
  });

  // The declaration is checked by defineProvider; the type adds what it says beyond the map (see DockerProvider).
  return defineProvider<DockerCapabilities, DockerSandboxNative>({
    specificationVersion: "v1",
    name: DOCKER_PROVIDER_NAME,
    capabilities: dockerCapabilities,
    flags: dockerFlags,
    honours: dockerHonours,
    // Every exec hands `handle.kill()` a way to signal its tree (found by its marker: docker-exec.ts).
    execSignals: true,
    mapError: (error, { operation }) => toDockerError(error, operation),

    async doCreate(spec, { signal }) {
      const container = await createSandbox(engine, spec, signal);
      return sandbox(container.id, container);
    },
    async doConnect(id, { signal }) {
      const found = await connectSandbox(engine, id, signal);
      return sandbox(found.id, found.container);
    },
    async doDestroy(s, { signal }) {
      await destroySandbox(engine, s.native, signal);
      metrics.forget(s.id);
    },
    doGetInfo(s, { signal }) {
      return sandboxInfo(engine, s.id, s.native, signal);
    },
    async doExec(s, request) {
      const out: Uint8Array[] = [];
      const err: Uint8Array[] = [];
      const exit = await runExec(engine, s.native, {
        ...execInput(request),
        onStdout: (chunk) => out.push(chunk),
        onStderr: (chunk) => err.push(chunk),
      });
      return { ...exit, stdout: Buffer.concat(out), stderr: Buffer.concat(err) };
    },
    doExecStream(s, request) {
      return runExec(engine, s.native, {
        ...execInput(request),
        onStdout: (chunk) => request.onStdout(chunk),
        onStderr: (chunk) => request.onStderr(chunk),
        ready: request.ready,
      });
    },
    async doKillProcess(s, pid, signalName, { signal }) {
      const out = await runHelper(engine, s.native, killPidCommand(pid, signalName), signal, "kill", {
        user: "0",
      });
      if (out.exitCode === 3) throw new SandboxError("NotFound", `no process ${pid} in the sandbox`);
      if (out.exitCode !== 0) {
        throw new SandboxError("Provider", `docker kill ${pid}: ${out.stderr.toString("utf8").trim()}`, {
          retryable: false,
        });
      }
    },
    doCreatePty(s, request) {
      return createPty(engine, s.native, request);
    },

    doReadFile(s, path, { signal }) {
      return readFile(engine, s.native, path, signal);
    },
    async doWriteFile(s, path, data, { signal, mode }) {
      await writeFile(engine, s.native, path, data, mode, signal);
    },
    doReadFileStream(s, path, { signal }) {
      return readFileStream(engine, s.native, path, signal);
    },
    async doWriteFileStream(s, path, data, { signal, mode }) {
      await writeFileStream(engine, s.native, path, data, mode, signal);
    },
    doStat(s, path, { signal }) {
      return statFile(engine, s.native, path, signal);
    },

    doList(filter, { signal }) {
      return listSandboxes(engine, filter, signal);
    },
    doStop(s, { signal }) {
      return stopSandbox(engine, s.native, signal);
    },
    doPause(s, { signal }) {
      return pauseSandbox(engine, s.native, signal);
    },
    doResume(s, { signal }) {
      return resumeSandbox(engine, s.native, signal);
    },
    async doSetTimeout(s, ttlMs, { signal }) {
      if (!(Number.isFinite(ttlMs) && ttlMs > 0)) {
        throw new SandboxError("Validation", `invalid ttl ${String(ttlMs)}`);
      }
      await inspectOurs(engine, s.native, signal);
      const at = new Date(Date.now() + ttlMs).toISOString();
      await writeFile(engine, s.native, EXPIRY_FILE, Buffer.from(at), 0o600, signal);
    },
    doMetrics(s, { signal }) {
      return metrics.read(engine, s.native, s.id, signal);
    },

    doExposePort(s, port, { signal, private: isPrivate }) {
      return exposePort(engine, s.native, port, isPrivate, signal);
    },
    doListPorts(s, { signal }) {
      return listPorts(engine, s.native, signal);
    },
    doSetEgress(s, policy, { signal }) {
      return setEgress(engine, s.native, policy, signal);
    },

    doCreateSnapshot(s, { signal, name }) {
      return createSnapshot(engine, s.native, s.id, name, signal);
    },
    doRestoreSnapshot(s, ref, { signal }) {
      return restoreSnapshot(engine, s.native, s.id, ref, signal);
    },
    doListSnapshots(s, { signal }) {
      return listSnapshots(engine, s.id, signal);
    },
    doDeleteSnapshot(_s, ref, { signal }) {
      return deleteSnapshot(engine, ref, signal);
    },
    async doFork(s, { signal, count }) {
      const forks = await forkSandbox(engine, s.native, s.id, count, signal);
      return forks.map((fork) => sandbox(fork.id, fork.container));
    },
  }) as DockerProvider;
}
