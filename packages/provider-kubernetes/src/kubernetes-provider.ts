import { randomBytes } from "node:crypto";
import {
  type DriverCommand,
  type DriverExecRequest,
  type DriverExit,
  type DriverSandbox,
  defineProvider,
  SandboxError,
  type SandboxProvider,
} from "@sbox/core/spec";
import { AgentSandboxes } from "./kubernetes-agent-sandboxes.js";
import {
  type KubernetesAgentSandboxCapabilities,
  type KubernetesCapabilities,
  kubernetesAgentSandboxCapabilities,
  kubernetesAgentSandboxFlags,
  kubernetesCapabilities,
  kubernetesFlags,
  kubernetesHonours,
} from "./kubernetes-capabilities.js";
import { KubernetesCluster } from "./kubernetes-cluster.js";
import { kubernetesError, toKubernetesError } from "./kubernetes-errors.js";
import { PodExec, type PodExecInput, type PodTarget } from "./kubernetes-exec.js";
import { readFile, readFileStream, writeFile } from "./kubernetes-files.js";
import { killPidArgv } from "./kubernetes-kill.js";
import { PROVIDER_NAME } from "./kubernetes-names.js";
import { setEgress } from "./kubernetes-network.js";
import { type KubernetesProviderOptions, resolveKubernetesOptions } from "./kubernetes-options.js";
import { PodSandboxes } from "./kubernetes-pods.js";
import { PortForwards } from "./kubernetes-port-forward.js";
import { createPty } from "./kubernetes-pty.js";
import type { KubernetesSandboxNative, SandboxObjects } from "./kubernetes-sandboxes.js";
import { ServicePorts } from "./kubernetes-service-ports.js";

/** The Kubernetes provider type (mode `pod`; mode `agent-sandbox` adds `stop`). */
export type KubernetesProvider = SandboxProvider<
  KubernetesCapabilities | KubernetesAgentSandboxCapabilities,
  KubernetesSandboxNative
>;

function argvOf(command: DriverCommand): string[] {
  if ("shell" in command) return ["sh", "-c", command.shell];
  if (command.argv.length === 0) throw kubernetesError("Validation", "a command needs at least one word");
  for (const word of command.argv) {
    if (word.includes("\0")) throw kubernetesError("Validation", "a command word cannot contain NUL");
  }
  return [...command.argv];
}

function checkRequest(request: DriverExecRequest): void {
  if (request.user !== undefined) {
    throw kubernetesError(
      "Validation",
      "kubernetes exec runs as the container's user: set securityContext in the image or pod instead of user",
    );
  }
}

/**
 * The Kubernetes provider: sandboxes are pods (or kubernetes-sigs/agent-sandbox Sandboxes and
 * SandboxClaims) on your own cluster, driven through `@kubernetes/client-node` (loaded on first use), with
 * exec, files, terminals and port-forward over the WebSocket channel protocol.
 *
 * ```ts
 * const client = createSandboxClient({ provider: kubernetes({ namespace: "sandboxes", image: "python:3.12-slim" }) });
 * ```
 */
export function kubernetes(options: KubernetesProviderOptions = {}): KubernetesProvider {
  const resolved = resolveKubernetesOptions(options);
  const cluster = new KubernetesCluster(resolved);
  const exec = new PodExec(cluster);
  const forwards = new PortForwards(cluster);
  const services =
    resolved.ports === "port-forward"
      ? undefined
      : new ServicePorts(cluster, resolved.ports.service, resolved.ports.nodeHost);
  const objects: SandboxObjects =
    resolved.mode === "agent-sandbox" ? new AgentSandboxes(cluster) : new PodSandboxes(cluster);
  const handle = async (id: string): Promise<DriverSandbox<KubernetesSandboxNative>> => {
    const apis = await cluster.apis();
    return { id, native: { kind: objects.kind, name: id, namespace: apis.namespace } };
  };
  const target = (s: DriverSandbox<KubernetesSandboxNative>, signal: AbortSignal): Promise<PodTarget> =>
    objects.pod(s.id, signal);

  /**
   * A command that ended without a status or by a signal may have lost its pod: then say so (NotFound)
   * instead of reporting the kill as the command's own exit.
   */
  const checkedRun = async (
    s: DriverSandbox<KubernetesSandboxNative>,
    input: Omit<PodExecInput, "signal">,
    signal: AbortSignal,
  ): Promise<DriverExit> => {
    const pod = await target(s, signal);
    let exit: DriverExit;
    try {
      exit = await exec.run(pod, { ...input, signal });
    } catch (error) {
      if (signal.aborted || !(SandboxError.isInstance(error) && error.code === "Provider")) throw error;
      await gone(s, error);
      throw error;
    }
    if ((exit.exitCode ?? 0) >= 128) await gone(s, undefined);
    return exit;
  };
  const gone = async (s: DriverSandbox<KubernetesSandboxNative>, cause: unknown) => {
    let state: string | undefined;
    try {
      // Bounded by the request deadline of the cluster's calls.
      state = (await objects.info(s.id, new AbortController().signal)).state;
    } catch (error) {
      if (SandboxError.isInstance(error) && error.code === "NotFound") state = "destroyed";
      else return;
    }
    if (state === "destroyed" || state === "stopped" || state === "error") {
      throw kubernetesError(
        "NotFound",
        `kubernetes exec: sandbox ${s.id} went away while the command ran (${state})`,
        { cause },
      );
    }
  };

  const declaration = {
    specificationVersion: "v1" as const,
    name: PROVIDER_NAME,
    honours: kubernetesHonours,
    // Every exec hands `handle.kill()` a way to signal its tree (found by its marker: kubernetes-exec.ts).
    execSignals: true,
    ...(resolved.workdir ? { workdir: resolved.workdir } : {}),
    // The core removes every credential the cluster sent (token, password, client key, an exec
    // plugin's token) from every error, cause chain included.
    secrets: () => cluster.secrets(),
    mapError: (error: unknown, { operation }: { operation: string }) => toKubernetesError(error, operation),
  };
  const driver = {
    async doCreate(spec: Parameters<SandboxObjects["create"]>[1], { signal }: { signal: AbortSignal }) {
      const id = `sbox-${randomBytes(6).toString("hex")}`;
      await objects.create(id, spec, signal);
      return handle(id);
    },
    async doConnect(id: string, { signal }: { signal: AbortSignal }) {
      await objects.find(id, signal);
      return handle(id);
    },
    async doDestroy(s: DriverSandbox<KubernetesSandboxNative>, { signal }: { signal: AbortSignal }) {
      await forwards.closeSandbox(s.id);
      await services?.closeSandbox(s.id, signal);
      await objects.destroy(s.id, signal);
    },
    doGetInfo(s: DriverSandbox<KubernetesSandboxNative>, { signal }: { signal: AbortSignal }) {
      return objects.info(s.id, signal);
    },
    async doExec(s: DriverSandbox<KubernetesSandboxNative>, request: DriverExecRequest) {
      checkRequest(request);
      const out: Uint8Array[] = [];
      const err: Uint8Array[] = [];
      const exit = await checkedRun(
        s,
        {
          argv: argvOf(request.command),
          stdin: request.stdin,
          onStarted: request.onStarted,
          onStdout: (chunk) => out.push(new Uint8Array(chunk)),
          onStderr: (chunk) => err.push(new Uint8Array(chunk)),
        },
        request.signal,
      );
      return { ...exit, stdout: Buffer.concat(out), stderr: Buffer.concat(err) };
    },
    doExecStream(
      s: DriverSandbox<KubernetesSandboxNative>,
      request: DriverExecRequest & {
        onStdout(chunk: Uint8Array | string): void;
        onStderr(chunk: Uint8Array | string): void;
      },
    ) {
      checkRequest(request);
      return checkedRun(
        s,
        {
          argv: argvOf(request.command),
          stdin: request.stdin,
          onStarted: request.onStarted,
          onStdout: (chunk) => request.onStdout(new Uint8Array(chunk)),
          onStderr: (chunk) => request.onStderr(new Uint8Array(chunk)),
        },
        request.signal,
      );
    },
    async doKillProcess(
      s: DriverSandbox<KubernetesSandboxNative>,
      pid: number,
      signalName: string,
      { signal }: { signal: AbortSignal },
    ) {
      const result = await exec.helper(await target(s, signal), killPidArgv(pid, signalName), signal);
      if (result.exitCode === 3) throw kubernetesError("NotFound", `no process ${pid} in the sandbox`);
      if (result.exitCode !== 0)
        throw kubernetesError("Provider", `kubernetes kill ${pid}: ${result.stderr.trim()}`);
    },
    async doCreatePty(s: DriverSandbox<KubernetesSandboxNative>, request: Parameters<typeof createPty>[2]) {
      return createPty(exec, await target(s, request.signal), request);
    },
    async doReadFile(
      s: DriverSandbox<KubernetesSandboxNative>,
      path: string,
      { signal }: { signal: AbortSignal },
    ) {
      return readFile(exec, await target(s, signal), path, signal);
    },
    async doReadFileStream(
      s: DriverSandbox<KubernetesSandboxNative>,
      path: string,
      { signal }: { signal: AbortSignal },
    ) {
      return readFileStream(exec, await target(s, signal), path, signal);
    },
    async doWriteFile(
      s: DriverSandbox<KubernetesSandboxNative>,
      path: string,
      data: Uint8Array,
      { signal, mode }: { signal: AbortSignal; mode?: number | undefined },
    ) {
      await writeFile(exec, await target(s, signal), path, data, mode, signal);
    },
    async doWriteFileStream(
      s: DriverSandbox<KubernetesSandboxNative>,
      path: string,
      data: ReadableStream<Uint8Array>,
      { signal, mode }: { signal: AbortSignal; mode?: number | undefined },
    ) {
      await writeFile(exec, await target(s, signal), path, data, mode, signal);
    },
    doList(filter: Parameters<SandboxObjects["list"]>[0], { signal }: { signal: AbortSignal }) {
      return objects.list(filter, signal);
    },
    async doSetTimeout(
      s: DriverSandbox<KubernetesSandboxNative>,
      ttlMs: number,
      { signal }: { signal: AbortSignal },
    ) {
      if (!(Number.isFinite(ttlMs) && ttlMs > 0))
        throw kubernetesError("Validation", `invalid ttl ${String(ttlMs)}`);
      await objects.setTimeout(s.id, ttlMs, signal);
    },
    async doExposePort(
      s: DriverSandbox<KubernetesSandboxNative>,
      port: number,
      { signal }: { signal: AbortSignal },
    ) {
      if (services) {
        await objects.find(s.id, signal);
        return services.expose(s.id, port, resolved.labels, signal);
      }
      return forwards.expose(s.id, () => target(s, signal), port);
    },
    async doListPorts(s: DriverSandbox<KubernetesSandboxNative>, { signal }: { signal: AbortSignal }) {
      return services ? services.list(s.id, signal) : forwards.list(s.id);
    },
    async doUnexposePort(
      s: DriverSandbox<KubernetesSandboxNative>,
      port: number,
      { signal }: { signal: AbortSignal },
    ) {
      if (services) await services.unexpose(s.id, port, signal);
      else await forwards.unexpose(s.id, port);
    },
    async doSetEgress(
      s: DriverSandbox<KubernetesSandboxNative>,
      policy: Parameters<typeof setEgress>[2],
      { signal }: { signal: AbortSignal },
    ) {
      await objects.find(s.id, signal);
      await setEgress(cluster, s.id, policy, resolved.labels, signal);
    },
    async doDispose() {
      await forwards.closeAll();
    },
  };
  if (objects.stop && objects.resume) {
    const stop = objects.stop.bind(objects);
    const resume = objects.resume.bind(objects);
    return defineProvider<KubernetesAgentSandboxCapabilities, KubernetesSandboxNative>({
      ...declaration,
      capabilities: kubernetesAgentSandboxCapabilities,
      flags: services ? { ...kubernetesAgentSandboxFlags, previewModel: "ip" } : kubernetesAgentSandboxFlags,
      ...driver,
      async doStop(s, { signal }) {
        await forwards.closeSandbox(s.id);
        await stop(s.id, signal);
      },
      doResume(s, { signal }) {
        return resume(s.id, signal);
      },
    });
  }
  return defineProvider<KubernetesCapabilities, KubernetesSandboxNative>({
    ...declaration,
    capabilities: kubernetesCapabilities,
    flags: services ? { ...kubernetesFlags, previewModel: "ip" } : kubernetesFlags,
    ...driver,
  });
}
