/** Outbound network policy: everything, nothing, or only the listed hosts / CIDRs. */
export type EgressPolicy = "allow-all" | "block-all" | { readonly allow: readonly string[] };

/** Compute resources requested at create time. */
export interface SandboxResources {
  /** Virtual CPUs (fractions allowed where the provider supports them). */
  vcpus?: number | undefined;
  /** Memory limit in MiB. */
  memoryMB?: number | undefined;
  /** Disk size in MiB. */
  diskMB?: number | undefined;
  /** GPU kind or count, e.g. `"a10g"` or `"1"`; requires the `gpu` capability. */
  gpu?: string | undefined;
}

/** A persistent volume mounted at create time; requires the `volumes` capability. */
export interface VolumeMount {
  /** Provider volume name or id. */
  name: string;
  /** Absolute mount path inside the sandbox. */
  mountPath: string;
  /** Mount read-only. */
  readOnly?: boolean | undefined;
}

/** What to create. A field the provider cannot honour is a `Validation` error before any provider call. */
export interface SandboxSpec {
  /** Image, template or snapshot reference, in the provider's terms. */
  template?: string | undefined;
  /** Human-readable name. */
  name?: string | undefined;
  /** Environment variables for every command; keys must match `[A-Za-z_][A-Za-z0-9_]*`. */
  env?: Readonly<Record<string, string>> | undefined;
  /** String labels, filterable with `client.list({ metadata })`. */
  metadata?: Readonly<Record<string, string>> | undefined;
  /** Time to live in milliseconds; enforced by the provider or by `client.reap()`. */
  ttlMs?: number | undefined;
  /** Compute resources. */
  resources?: SandboxResources | undefined;
  /** Ports to publish at create time. */
  ports?: readonly number[] | undefined;
  /** Network policy at create time; anything but allow-all requires `egressControl`. */
  network?: { readonly egress: EgressPolicy } | undefined;
  /** Volumes to mount; requires `volumes`. */
  volumes?: readonly VolumeMount[] | undefined;
  /** Region to place the sandbox in; requires `region`. */
  region?: string | undefined;
  /** Names of provider-managed secrets to inject as env; requires `secretsVault`. */
  secrets?: readonly string[] | undefined;
  /**
   * Makes `create` safe to retry: a create with a key that an earlier create already used returns that
   * earlier sandbox instead of making a second one (honoured by the provider, or by the core through
   * metadata and `list`; `Validation` where neither can). With a key the client also retries retryable
   * failures and tries fallback providers; without one a failed create is reported once, never repeated.
   */
  idempotencyKey?: string | undefined;
  /** Aborts the create. */
  signal?: AbortSignal | undefined;
}

/**
 * Spec fields a provider may declare it honours (in `SandboxProvider.honours`). Fields that need a
 * capability (gpu, region, volumes, secrets, network) are also checked against the capability map.
 */
export type SpecField =
  | "template"
  | "name"
  | "env"
  | "metadata"
  | "ttlMs"
  | "resources.vcpus"
  | "resources.memoryMB"
  | "resources.diskMB"
  | "resources.gpu"
  | "ports"
  | "network"
  | "volumes"
  | "region"
  | "secrets"
  /**
   * The provider itself makes a repeated create with the same key return the sandbox the first made.
   * Without it the core does so where the provider keeps metadata and lists (see `client.create`).
   */
  | "idempotencyKey";

/** Lifecycle states reported by `getInfo()`; always read live from the provider. */
export type SandboxState = "starting" | "running" | "paused" | "stopped" | "destroyed" | "error" | "unknown";

/** Filter for `client.list()`. Every field is honoured: by the provider or, failing that, by the core. */
export interface ListFilter {
  /** Every listed key must equal the given value. */
  metadata?: Readonly<Record<string, string>> | undefined;
  /** Only sandboxes in one of these states. */
  state?: SandboxState | readonly SandboxState[] | undefined;
  /** At most this many results. */
  limit?: number | undefined;
}
