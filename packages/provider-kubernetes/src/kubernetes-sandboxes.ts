/**
 * The two ways a sandbox lives on the cluster behind one interface the provider drives: a plain pod
 * (`mode: "pod"`), or an agent-sandbox `Sandbox` / `SandboxClaim` (`mode: "agent-sandbox"`). Each says how
 * to create, find, describe, list, expire, stop and destroy its objects, and which pod commands run in.
 */
import type { DriverSandboxInfo, ListFilter, SandboxSpec } from "@sbox/core/spec";
import type { PodTarget } from "./kubernetes-exec.js";

/** What `sandbox.raw()` returns: where the sandbox is on the cluster. */
export interface KubernetesSandboxNative {
  /** The object that is the sandbox: `Pod`, `Sandbox` or `SandboxClaim`. */
  readonly kind: "Pod" | "Sandbox" | "SandboxClaim";
  readonly name: string;
  readonly namespace: string;
}

/** One way of keeping sandboxes on the cluster. */
export interface SandboxObjects {
  readonly kind: KubernetesSandboxNative["kind"];
  /** Creates the sandbox `id` and returns once its pod runs. */
  create(id: string, spec: SandboxSpec, signal: AbortSignal): Promise<void>;
  /** Throws `NotFound` unless the sandbox exists and is ours. */
  find(id: string, signal: AbortSignal): Promise<void>;
  /** The pod commands run in (may read the cluster). */
  pod(id: string, signal: AbortSignal): Promise<PodTarget>;
  /** Live state and metadata; `NotFound` when gone. */
  info(id: string, signal: AbortSignal): Promise<DriverSandboxInfo>;
  list(filter: ListFilter, signal: AbortSignal): AsyncIterable<DriverSandboxInfo>;
  /** Deletes the sandbox and waits (bounded) until its pod is gone; resolves when already gone. */
  destroy(id: string, signal: AbortSignal): Promise<void>;
  setTimeout(id: string, ttlMs: number, signal: AbortSignal): Promise<void>;
  stop?(id: string, signal: AbortSignal): Promise<void>;
  resume?(id: string, signal: AbortSignal): Promise<void>;
}
