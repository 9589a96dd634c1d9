/**
 * The emulated node's kubelet: every pod bound to the node is one sandbox of the backend, created from the
 * pod's image (the backend template), with the container's env and resource limits, and the egress its
 * network policies allow. The container's command (`command` + `args`, or the image's defaults from the
 * `images` map) runs in it as the main process; its output is the container log. Pod status follows what
 * happens, with the kubelet's reasons: `ContainerCreating`, `ErrImagePull` then `ImagePullBackOff` while the
 * backend cannot make the sandbox from that image (retried with back-off, the pod stays `Pending`),
 * `CreateContainerError`, `Running`, `Completed`/`Error` exits, restarts by `restartPolicy` (a restart is a
 * fresh sandbox, as a fresh container has a fresh filesystem) with `CrashLoopBackOff` between them,
 * `DeadlineExceeded` for `activeDeadlineSeconds`. Deleting a pod signals its processes (SIGTERM), waits up
 * to the grace period for the main process, then destroys the sandbox and removes the pod.
 */
import type { AnyCapabilities, Sandbox, SandboxSpec } from "@sbox/core";
import type { EgressPolicy } from "@sbox/core/spec";
import type { EmulatorBackend } from "../backend.js";
import type { EmulatorClock, EmulatorTimer } from "../clock.js";
import { runInMachine } from "../machine-exec.js";
import { ContainerLog } from "./kubernetes-container-log.js";
import type { EventRecorder } from "./kubernetes-events.js";
import { containerExitCode, type KubeObject, signalNumber, timestamp } from "./kubernetes-objects.js";
import {
  type ContainerSpec,
  cpuCores,
  memoryMiB,
  type PodSpec,
  podSpecOf,
} from "./kubernetes-pod-admission.js";
import { CONFIG_MAP, POD, SECRET } from "./kubernetes-resources.js";
import type { KubernetesStore } from "./kubernetes-store.js";

/** What an image means on the backend: its template and the defaults a container without `command`/`args` runs. */
export interface KubernetesImage {
  /** Backend template (default: the image name itself, where the backend honours templates). */
  readonly template?: string | undefined;
  /** The image's ENTRYPOINT. */
  readonly entrypoint?: readonly string[] | undefined;
  /** The image's CMD. */
  readonly cmd?: readonly string[] | undefined;
}

/** Images by name: a backend template, `false` for an image that cannot be pulled, or a description. */
export type KubernetesImageMap = Readonly<Record<string, string | false | KubernetesImage>>;

/** What the kubelet needs of its emulator. */
export interface KubeletOptions {
  readonly store: KubernetesStore;
  readonly backend: EmulatorBackend;
  readonly clock: EmulatorClock;
  readonly nodeName: string;
  readonly images: KubernetesImageMap;
  /** First delay of a crash-looping container's restarts (doubles up to five minutes; default 10 000). */
  readonly restartBackoffMs: number;
  /** Delay before a failed pull is retried (default 10 000). */
  readonly pullBackoffMs: number;
  readonly events: EventRecorder;
  /** The egress the network policies give a pod. */
  egressOf(pod: KubeObject): EgressPolicy;
}

/** The environment marker of a pod's main process tree (for SIGTERM on deletion). */
const POD_MARKER = "SBOX_K8S_POD_UID";
/** How long the node waits for a process that ignores SIGTERM at most, whatever the grace period says. */
const MAX_GRACE_MS = 60_000;

interface ContainerState {
  waiting?: { reason: string; message?: string };
  running?: { startedAt: string };
  terminated?: {
    exitCode: number;
    signal?: number;
    reason: string;
    message?: string;
    startedAt?: string;
    finishedAt: string;
  };
}

/** Sends SIGTERM to every process carrying `$1` as its pod marker (busybox and GNU userlands). */
const TERM_SCRIPT = `for d in /proc/[0-9]*; do p=\${d#/proc/}; [ "$p" = "$$" ] && continue; case "$(tr '\\0' '\\n' < "$d/environ" 2>/dev/null)" in *"${POD_MARKER}=$1"*) kill -TERM "$p" 2>/dev/null ;; esac; done; exit 0`;

function pullFailure(message: string): boolean {
  return /pull|not found|no such image|manifest unknown|repository does not exist|unauthorized|denied|not on the engine/i.test(
    message,
  );
}

/** One pod on the node. */
export class PodRuntime {
  /** The backend sandbox while a container instance exists. */
  sandbox: Sandbox<AnyCapabilities> | undefined;
  /** The current container instance's log. */
  log: ContainerLog = new ContainerLog();
  /** The previous instance's log, after a restart. */
  previousLog: ContainerLog | undefined;
  private state: ContainerState = { waiting: { reason: "ContainerCreating" } };
  private lastState: ContainerState = {};
  private restartCount = 0;
  private podIP: string | undefined;
  private startTime: string | undefined;
  private phase: "Pending" | "Running" | "Succeeded" | "Failed" = "Pending";
  private reason: { reason: string; message: string } | undefined;
  private main:
    | { abort: AbortController; stdin?: WritableStreamDefaultWriter<Uint8Array>; done: Promise<void> }
    | undefined;
  private generation = 0;
  private terminating = false;
  private readonly timers = new Set<EmulatorTimer>();
  private work: Promise<void> = Promise.resolve();
  private readonly exitListeners = new Set<() => void>();

  constructor(
    readonly namespace: string,
    readonly name: string,
    readonly uid: string,
    private readonly node: KubeletOptions,
    private readonly podIPs: () => string,
  ) {}

  private get pod(): KubeObject | undefined {
    const pod = this.node.store.get(POD, this.namespace, this.name);
    return pod?.metadata.uid === this.uid ? pod : undefined;
  }

  private container(pod: KubeObject): ContainerSpec {
    return podSpecOf(pod).containers[0]!;
  }

  private serial(task: () => Promise<void>): Promise<void> {
    const next = this.work.then(task, task);
    this.work = next.catch(() => undefined);
    return next;
  }

  private later(ms: number, task: () => void): void {
    const timer = this.node.clock.setTimer(() => {
      this.timers.delete(timer);
      if (!this.terminating) task();
    }, ms);
    this.timers.add(timer);
  }

  /** Whether the container runs (exec, attach and port-forward need it). */
  get running(): boolean {
    return this.state.running !== undefined && !this.terminating && this.sandbox !== undefined;
  }

  /** Writes the status the runtime knows into the pod. */
  private publish(): void {
    const pod = this.pod;
    if (!pod) return;
    const container = this.container(pod);
    const now = timestamp(this.node.clock.now());
    const previous = (pod.status ?? {}) as {
      conditions?: { type: string; status: string; lastTransitionTime?: string }[];
    };
    const ready = this.running && this.phase === "Running";
    const condition = (type: string, status: boolean, reason?: string, message?: string) => {
      const old = previous.conditions?.find((c) => c.type === type);
      const text = status ? "True" : "False";
      return {
        type,
        status: text,
        lastProbeTime: null,
        lastTransitionTime: old && old.status === text ? old.lastTransitionTime : now,
        ...(reason ? { reason } : {}),
        ...(message ? { message } : {}),
      };
    };
    const done = this.phase === "Succeeded" || this.phase === "Failed";
    const status: Record<string, unknown> = {
      ...(pod.status ?? {}),
      phase: this.phase,
      hostIP: "127.0.0.1",
      hostIPs: [{ ip: "127.0.0.1" }],
      conditions: [
        condition("PodReadyToStartContainers", this.sandbox !== undefined || done),
        condition("Initialized", true),
        condition(
          "Ready",
          ready,
          ready ? undefined : "ContainersNotReady",
          ready ? undefined : `containers with unready status: [${container.name}]`,
        ),
        condition(
          "ContainersReady",
          ready,
          ready ? undefined : "ContainersNotReady",
          ready ? undefined : `containers with unready status: [${container.name}]`,
        ),
        condition("PodScheduled", true),
      ],
      containerStatuses: [
        {
          name: container.name,
          image: container.image,
          imageID: `sbox://${this.node.backend.name}/${container.image}`,
          ...(this.sandbox ? { containerID: `sbox://${this.sandbox.id}` } : {}),
          ready,
          started: this.state.running !== undefined,
          restartCount: this.restartCount,
          state: this.state,
          lastState: this.lastState,
        },
      ],
    };
    if (this.startTime) status.startTime = this.startTime;
    if (this.podIP) {
      status.podIP = this.podIP;
      status.podIPs = [{ ip: this.podIP }];
    }
    if (this.reason) {
      status.reason = this.reason.reason;
      status.message = this.reason.message;
    }
    pod.status = status;
    try {
      this.node.store.update(POD, pod, { subresource: "status" });
    } catch {
      // The pod went away meanwhile.
    }
  }

  private resolveEnv(pod: KubeObject, container: ContainerSpec): Record<string, string> {
    const env: Record<string, string> = { HOSTNAME: this.name };
    const secretOrMap = (
      kind: "secret" | "configMap",
      name: string,
      key?: string,
    ): string | Record<string, string> | undefined => {
      const object = this.node.store.get(kind === "secret" ? SECRET : CONFIG_MAP, this.namespace, name);
      if (!object) return undefined;
      const data: Record<string, string> = {};
      if (kind === "secret") {
        for (const [k, v] of Object.entries((object.data ?? {}) as Record<string, string>))
          data[k] = Buffer.from(v, "base64").toString("utf8");
        for (const [k, v] of Object.entries((object.stringData ?? {}) as Record<string, string>)) data[k] = v;
      } else Object.assign(data, (object.data ?? {}) as Record<string, string>);
      return key === undefined ? data : data[key];
    };
    for (const from of container.envFrom ?? []) {
      const ref = from.secretRef ?? from.configMapRef;
      if (!ref) continue;
      const data = secretOrMap(from.secretRef ? "secret" : "configMap", ref.name);
      if (data === undefined) {
        if (ref.optional) continue;
        throw new Error(`${from.secretRef ? "secret" : "configmap"} "${ref.name}" not found`);
      }
      for (const [k, v] of Object.entries(data as Record<string, string>))
        env[`${from.prefix ?? ""}${k}`] = v;
    }
    for (const e of container.env ?? []) {
      if (e.value !== undefined || !e.valueFrom) {
        env[e.name] = e.value ?? "";
        continue;
      }
      const field = e.valueFrom.fieldRef?.fieldPath;
      if (field) {
        const values: Record<string, string | undefined> = {
          "metadata.name": this.name,
          "metadata.namespace": this.namespace,
          "metadata.uid": this.uid,
          "spec.nodeName": this.node.nodeName,
          "status.podIP": this.podIP,
          "status.hostIP": "127.0.0.1",
        };
        env[e.name] = values[field] ?? "";
        continue;
      }
      const secret = e.valueFrom.secretKeyRef;
      const map = e.valueFrom.configMapKeyRef;
      const ref = secret ?? map;
      if (ref?.name) {
        const value = secretOrMap(secret ? "secret" : "configMap", ref.name, ref.key);
        if (value === undefined) {
          if (ref.optional) continue;
          throw new Error(
            `couldn't find key ${ref.key} in ${secret ? "Secret" : "ConfigMap"} ${this.namespace}/${ref.name}`,
          );
        }
        env[e.name] = value as string;
      }
    }
    void pod;
    return env;
  }

  private imageOf(
    container: ContainerSpec,
  ): { template: string | undefined; entrypoint: readonly string[]; cmd: readonly string[] } | false {
    const mapped = this.node.images[container.image];
    if (mapped === false) return false;
    if (typeof mapped === "string") return { template: mapped, entrypoint: [], cmd: [] };
    return {
      template: mapped?.template ?? container.image,
      entrypoint: mapped?.entrypoint ?? [],
      cmd: mapped?.cmd ?? [],
    };
  }

  private specFor(pod: KubeObject, container: ContainerSpec, template: string | undefined): SandboxSpec {
    const honours = this.node.backend.honours;
    const spec: SandboxSpec = {
      env: this.resolveEnv(pod, container),
      metadata: { "k8s-namespace": this.namespace, "k8s-pod": this.name, "k8s-pod-uid": this.uid },
    };
    if (template !== undefined && honours.includes("template")) spec.template = template;
    const limits = container.resources?.limits ?? {};
    const vcpus = cpuCores(limits.cpu);
    const memoryMB = memoryMiB(limits.memory);
    const resources: { vcpus?: number; memoryMB?: number } = {};
    if (vcpus !== undefined && honours.includes("resources.vcpus")) resources.vcpus = vcpus;
    if (memoryMB !== undefined && honours.includes("resources.memoryMB")) resources.memoryMB = memoryMB;
    if (Object.keys(resources).length > 0) spec.resources = resources;
    const egress = this.node.egressOf(pod);
    if (egress !== "allow-all" && honours.includes("network")) spec.network = { egress };
    return spec;
  }

  /** Starts the pod: the first container instance. */
  start(): Promise<void> {
    return this.serial(() => this.boot());
  }

  private async boot(): Promise<void> {
    const pod = this.pod;
    if (!pod || this.terminating) return;
    const container = this.container(pod);
    this.startTime ??= timestamp(this.node.clock.now());
    const image = this.imageOf(container);
    this.state = { waiting: { reason: "ContainerCreating" } };
    this.publish();
    if (image === false)
      return this.pullFailed(
        pod,
        container,
        `failed to pull and unpack image "${container.image}": not found`,
      );
    let spec: SandboxSpec;
    try {
      spec = this.specFor(pod, container, image.template);
    } catch (error) {
      this.state = { waiting: { reason: "CreateContainerConfigError", message: (error as Error).message } };
      this.node.events(pod, "Warning", "Failed", `Error: ${(error as Error).message}`);
      this.publish();
      this.later(this.node.pullBackoffMs, () => void this.serial(() => this.boot()));
      return;
    }
    const argv = [
      ...(container.command ?? image.entrypoint),
      ...(container.args ?? (container.command ? [] : image.cmd)),
    ];
    if (argv.length === 0) {
      const message = `failed to create containerd task: no command specified (the pod gives neither command nor args, and the emulator knows no entrypoint for image "${container.image}": describe it in the emulator's images option)`;
      this.state = { waiting: { reason: "CreateContainerError", message } };
      this.node.events(pod, "Warning", "Failed", `Error: ${message}`);
      this.publish();
      return;
    }
    this.node.events(pod, "Normal", "Pulling", `Pulling image "${container.image}"`);
    let sandbox: Sandbox<AnyCapabilities>;
    try {
      sandbox = await this.node.backend.create(spec);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (pullFailure(message)) return this.pullFailed(pod, container, message);
      this.state = { waiting: { reason: "CreateContainerError", message } };
      this.node.events(pod, "Warning", "Failed", `Error: ${message}`);
      this.publish();
      this.later(this.node.pullBackoffMs, () => void this.serial(() => this.boot()));
      return;
    }
    if (this.terminating || !this.pod) {
      await this.node.backend.release(sandbox).catch(() => undefined);
      return;
    }
    this.sandbox = sandbox;
    this.node.events(
      pod,
      "Normal",
      "Pulled",
      `Container image "${container.image}" already present on machine`,
    );
    this.podIP ??= await this.probeIP(sandbox);
    this.node.events(pod, "Normal", "Created", `Created container: ${container.name}`);
    this.startMain(pod, container, argv, spec.env ?? {});
    this.node.events(pod, "Normal", "Started", `Started container ${container.name}`);
    this.phase = "Running";
    this.reason = undefined;
    this.publish();
    const deadline = podSpecOf(pod).activeDeadlineSeconds;
    if (deadline !== undefined && this.restartCount === 0) this.armDeadline(deadline);
  }

  private pullFailed(pod: KubeObject, container: ContainerSpec, message: string): void {
    this.state = { waiting: { reason: "ErrImagePull", message } };
    this.node.events(pod, "Warning", "Failed", `Failed to pull image "${container.image}": ${message}`);
    this.publish();
    this.later(Math.min(this.node.pullBackoffMs, 2_000), () => {
      if (this.sandbox || this.terminating) return;
      this.state = {
        waiting: {
          reason: "ImagePullBackOff",
          message: `Back-off pulling image "${container.image}": ${message}`,
        },
      };
      this.node.events(pod, "Normal", "BackOff", `Back-off pulling image "${container.image}"`);
      this.publish();
      this.later(this.node.pullBackoffMs, () => void this.serial(() => this.boot()));
    });
  }

  private async probeIP(sandbox: Sandbox<AnyCapabilities>): Promise<string> {
    let out = "";
    try {
      await runInMachine(this.node.backend, sandbox, {
        argv: ["hostname", "-i"],
        signal: AbortSignal.timeout(5_000),
        onStdout: (chunk) => {
          out += Buffer.from(chunk).toString("utf8");
        },
        onStderr: () => {},
      });
    } catch {
      // Fall back to an address of the emulated pod network.
    }
    const found = out.split(/\s+/).find((w) => /^\d+\.\d+\.\d+\.\d+$/.test(w) && !w.startsWith("127."));
    return found ?? this.podIPs();
  }

  /** Writes to the main process's stdin (attach), when the container keeps stdin open. */
  async writeMainStdin(data: Uint8Array): Promise<boolean> {
    if (!this.main?.stdin) return false;
    await this.main.stdin.write(data);
    return true;
  }

  /** Closes the main process's stdin. */
  async closeMainStdin(): Promise<void> {
    await this.main?.stdin?.close().catch(() => undefined);
  }

  /** Calls `listener` when the current main process ends. */
  onMainExit(listener: () => void): () => void {
    this.exitListeners.add(listener);
    return () => this.exitListeners.delete(listener);
  }

  private startMain(
    pod: KubeObject,
    container: ContainerSpec,
    argv: string[],
    env: Record<string, string>,
  ): void {
    const sandbox = this.sandbox!;
    const generation = ++this.generation;
    const abort = new AbortController();
    const log = this.log;
    let stdin: ReadableStream<Uint8Array> | undefined;
    let writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
    if (container.stdin) {
      const pipe = new TransformStream<Uint8Array, Uint8Array>();
      stdin = pipe.readable;
      writer = pipe.writable.getWriter();
    }
    const startedAt = timestamp(this.node.clock.now());
    this.state = { running: { startedAt } };
    const user = container.securityContext?.runAsUser ?? podSpecOf(pod).securityContext?.runAsUser;
    const done = runInMachine(this.node.backend, sandbox, {
      argv,
      env: { ...env, [POD_MARKER]: this.uid },
      ...(container.workingDir ? { cwd: container.workingDir } : {}),
      ...(user !== undefined ? { user: String(user) } : {}),
      ...(stdin ? { stdin } : {}),
      signal: abort.signal,
      onStdout: (chunk) => log.write(chunk, this.node.clock.now()),
      onStderr: (chunk) => log.write(chunk, this.node.clock.now()),
    }).then(
      (exit) => this.mainExited(generation, startedAt, exit.exitCode, exit.signal, undefined),
      (error: unknown) =>
        this.mainExited(
          generation,
          startedAt,
          128 + 9,
          "SIGKILL",
          error instanceof Error ? error.message : String(error),
        ),
    );
    this.main = { abort, ...(writer ? { stdin: writer } : {}), done };
  }

  private mainExited(
    generation: number,
    startedAt: string,
    exitCode: number,
    signal: string | undefined,
    failure: string | undefined,
  ): void {
    if (generation !== this.generation) return;
    this.main = undefined;
    this.log.end();
    for (const listener of [...this.exitListeners]) listener();
    if (this.terminating) return;
    const pod = this.pod;
    if (!pod) return;
    const code = containerExitCode(exitCode, signal);
    const terminated: ContainerState["terminated"] = {
      exitCode: code,
      reason: code === 0 ? "Completed" : "Error",
      startedAt,
      finishedAt: timestamp(this.node.clock.now()),
      ...(signal ? { signal: signalNumber(signal) } : {}),
      ...(failure ? { message: failure } : {}),
    };
    const policy = podSpecOf(pod).restartPolicy ?? "Always";
    const restart = policy === "Always" || (policy === "OnFailure" && code !== 0);
    if (!restart) {
      this.state = { terminated };
      this.phase = code === 0 ? "Succeeded" : "Failed";
      this.publish();
      void this.serial(() => this.releaseSandbox());
      return;
    }
    this.lastState = { terminated };
    const delay =
      this.restartCount === 0
        ? 0
        : Math.min(this.node.restartBackoffMs * 2 ** (this.restartCount - 1), 300_000);
    const container = this.container(pod);
    if (delay > 0) {
      this.state = {
        waiting: {
          reason: "CrashLoopBackOff",
          message: `back-off ${Math.round(delay / 1000)}s restarting failed container=${container.name} pod=${this.name}_${this.namespace}(${this.uid})`,
        },
      };
      this.node.events(pod, "Warning", "BackOff", "Back-off restarting failed container");
    } else this.state = { waiting: { reason: "ContainerCreating" } };
    this.publish();
    this.later(
      delay,
      () =>
        void this.serial(async () => {
          await this.releaseSandbox();
          this.restartCount += 1;
          this.previousLog = this.log;
          this.log = new ContainerLog();
          await this.boot();
        }),
    );
  }

  private armDeadline(seconds: number): void {
    const started = Date.parse(this.startTime ?? timestamp(this.node.clock.now()));
    const left = started + seconds * 1000 - this.node.clock.now();
    this.later(
      Math.max(0, left),
      () =>
        void this.serial(async () => {
          const pod = this.pod;
          if (!pod || this.phase === "Succeeded" || this.phase === "Failed") return;
          this.generation += 1;
          const startedAt = this.state.running?.startedAt;
          this.main?.abort.abort();
          this.main = undefined;
          this.log.end();
          this.phase = "Failed";
          this.reason = {
            reason: "DeadlineExceeded",
            message: "Pod was active on the node longer than the specified deadline",
          };
          this.state = {
            terminated: {
              exitCode: 137,
              reason: "Error",
              ...(startedAt ? { startedAt } : {}),
              finishedAt: timestamp(this.node.clock.now()),
            },
          };
          this.node.events(
            pod,
            "Normal",
            "DeadlineExceeded",
            "Pod was active on the node longer than the specified deadline",
          );
          this.publish();
          await this.releaseSandbox();
        }),
    );
  }

  private async releaseSandbox(): Promise<void> {
    const sandbox = this.sandbox;
    this.sandbox = undefined;
    if (sandbox) await this.node.backend.release(sandbox).catch(() => undefined);
  }

  /** Applies the egress policy again (network policies changed). */
  async applyEgress(): Promise<void> {
    const pod = this.pod;
    const sandbox = this.sandbox;
    if (!pod || !sandbox?.network) return;
    await sandbox.network.setEgress(this.node.egressOf(pod)).catch(() => undefined);
  }

  /**
   * Ends the pod: SIGTERM to its processes, up to the grace period for the main process to go, then the
   * sandbox is destroyed and the pod removed from the store.
   */
  terminate(gracePeriodSeconds: number): Promise<void> {
    if (this.terminating) return this.work;
    this.terminating = true;
    for (const timer of this.timers) timer.cancel();
    this.timers.clear();
    const finish = async () => {
      const main = this.main;
      const sandbox = this.sandbox;
      if (main && sandbox && gracePeriodSeconds > 0) {
        await runInMachine(this.node.backend, sandbox, {
          argv: ["sh", "-c", TERM_SCRIPT, "sbox-term", this.uid],
          signal: AbortSignal.timeout(5_000),
          onStdout: () => {},
          onStderr: () => {},
        }).catch(() => undefined);
        const grace = Math.min(gracePeriodSeconds * 1000, MAX_GRACE_MS);
        await Promise.race([main.done, new Promise((resolve) => setTimeout(resolve, grace).unref())]);
      }
      this.generation += 1;
      main?.abort.abort();
      this.main = undefined;
      this.log.end();
      await this.releaseSandbox();
      const pod = this.pod;
      if (pod) {
        try {
          this.node.store.remove(POD, this.namespace, this.name);
        } catch {
          // Already removed.
        }
      }
    };
    const next = this.work.then(finish, finish);
    this.work = next.catch(() => undefined);
    return next;
  }
}

/** The node: a runtime per pod bound to it, driven by the store's changes. */
export class Kubelet {
  private readonly pods = new Map<string, PodRuntime>();
  private unsubscribe: (() => void) | undefined;
  private nextIP = 2;

  constructor(private readonly options: KubeletOptions) {}

  private key(namespace: string, name: string): string {
    return `${namespace}/${name}`;
  }

  /** Starts following the store. */
  start(): void {
    this.unsubscribe = this.options.store.subscribe((event) => {
      if (event.definition !== POD) return;
      const pod = event.object;
      const key = this.key(pod.metadata.namespace ?? "default", pod.metadata.name ?? "");
      const spec = podSpecOf(pod) as PodSpec;
      if (event.type === "ADDED" && spec.nodeName === this.options.nodeName) {
        const runtime = new PodRuntime(
          pod.metadata.namespace ?? "default",
          pod.metadata.name ?? "",
          pod.metadata.uid ?? "",
          this.options,
          () => this.allocateIP(),
        );
        this.pods.set(key, runtime);
        queueMicrotask(() => void runtime.start());
        return;
      }
      const runtime = this.pods.get(key);
      if (!runtime || runtime.uid !== pod.metadata.uid) {
        // A pod that is not ours (unscheduled) is removed at once when deleted.
        if (event.type === "MODIFIED" && pod.metadata.deletionTimestamp && !runtime) {
          try {
            this.options.store.remove(POD, pod.metadata.namespace, pod.metadata.name ?? "");
          } catch {
            // Gone already.
          }
        }
        return;
      }
      if (event.type === "DELETED") {
        this.pods.delete(key);
        void runtime.terminate(0);
        return;
      }
      if (pod.metadata.deletionTimestamp) {
        void runtime.terminate(pod.metadata.deletionGracePeriodSeconds ?? 30).finally(() => {
          if (this.pods.get(key) === runtime) this.pods.delete(key);
        });
      }
    });
  }

  private allocateIP(): string {
    const n = this.nextIP++;
    return `10.244.${Math.floor(n / 250) % 250}.${(n % 250) + 2}`;
  }

  /** The runtime of a pod, if it is on the node. */
  runtime(namespace: string, name: string): PodRuntime | undefined {
    return this.pods.get(this.key(namespace, name));
  }

  /** Every pod runtime. */
  all(): PodRuntime[] {
    return [...this.pods.values()];
  }

  /** Ends every pod's sandbox (the emulator is closing). */
  async close(): Promise<void> {
    this.unsubscribe?.();
    await Promise.allSettled([...this.pods.values()].map((p) => p.terminate(0)));
    this.pods.clear();
  }
}
