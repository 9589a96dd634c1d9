/**
 * The pod of a sandbox, from the sandbox spec and the provider options: the image (`template`, else the
 * `image` option), env, CPU and memory as requests and limits, the declared ports, the runtime class and
 * node selector, a hard `activeDeadlineSeconds` when asked. The container's main process only keeps the
 * pod alive (and ends on SIGTERM, so deletion is quick); commands are execs. The pod gets no service
 * account token, no service links and `restartPolicy: Never` (a sandbox whose main process died is
 * gone, not silently replaced by a fresh filesystem).
 */
import type { SandboxSpec } from "@sbox/core/spec";
import { CONTAINER_NAME } from "./kubernetes-names.js";
import type { ResolvedKubernetesOptions } from "./kubernetes-options.js";

/** The container's main process: wait forever, end on SIGTERM. */
export const KEEP_ALIVE_SCRIPT = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done";

/** A pod spec (plain JSON, as the API takes it). */
export type PodSpecManifest = Record<string, unknown>;

/** The pod spec of a sandbox. */
export function podSpecFor(spec: SandboxSpec, options: ResolvedKubernetesOptions): PodSpecManifest {
  const container: Record<string, unknown> = {
    name: CONTAINER_NAME,
    image: spec.template ?? options.image,
    command: ["sh", "-c", KEEP_ALIVE_SCRIPT],
  };
  const env = Object.entries(spec.env ?? {}).map(([name, value]) => ({ name, value }));
  if (env.length > 0) container.env = env;
  const resources: Record<string, string> = {};
  if (spec.resources?.vcpus !== undefined)
    resources.cpu = `${Math.max(1, Math.round(spec.resources.vcpus * 1000))}m`;
  if (spec.resources?.memoryMB !== undefined)
    resources.memory = `${Math.max(1, Math.round(spec.resources.memoryMB))}Mi`;
  if (Object.keys(resources).length > 0) container.resources = { requests: resources, limits: resources };
  if (spec.ports && spec.ports.length > 0)
    container.ports = spec.ports.map((containerPort) => ({ containerPort, protocol: "TCP" }));
  if (options.workdir) container.workingDir = options.workdir;
  if (options.imagePullPolicy) container.imagePullPolicy = options.imagePullPolicy;
  const pod: PodSpecManifest = {
    containers: [container],
    restartPolicy: "Never",
    terminationGracePeriodSeconds: 5,
    automountServiceAccountToken: false,
    enableServiceLinks: false,
  };
  if (options.runtimeClassName) pod.runtimeClassName = options.runtimeClassName;
  if (Object.keys(options.nodeSelector).length > 0) pod.nodeSelector = { ...options.nodeSelector };
  if (options.serviceAccountName) pod.serviceAccountName = options.serviceAccountName;
  if (options.activeDeadlineSeconds !== undefined) pod.activeDeadlineSeconds = options.activeDeadlineSeconds;
  return pod;
}
