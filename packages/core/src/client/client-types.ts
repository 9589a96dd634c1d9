import type { LossyEmulation } from "../capabilities/capability-emulation.js";
import type { CapabilityLevel, CapabilityMap, CapabilityName } from "../capabilities/capability-names.js";
import type { SandboxError } from "../errors/sandbox-error.js";
import type { KnownMethods, UnknownMethods } from "../sandbox/method-gates.js";
import type { Capabilities, Sandbox, SandboxInfo } from "../sandbox/sandbox-types.js";
import type { SandboxProvider } from "../spec/provider-spec.js";
import type { ListFilter, SandboxSpec, SpecField } from "../spec/sandbox-spec.js";
import type { SpecFor } from "./spec-for.js";

/** Retry policy for retryable errors: exponential backoff with full jitter. */
export interface RetryOptions {
  /** How many times to retry after the first attempt (default 2). */
  retries?: number | undefined;
  /** First backoff in ms (default 200). */
  baseDelayMs?: number | undefined;
  /** Largest backoff in ms (default 5000). */
  maxDelayMs?: number | undefined;
  /** Overrides the default decision (`err.retryable`). */
  shouldRetry?: ((error: SandboxError, attempt: number) => boolean) | undefined;
}

/** Lifecycle hooks. A throwing hook fails the operation with its error (wrapped as a SandboxError). */
export interface SandboxHooks {
  /** Called before every create; may return a changed spec. */
  beforeCreate?:
    | ((
        spec: SandboxSpec,
        context: { provider: string },
      ) => SandboxSpec | undefined | Promise<SandboxSpec | undefined>)
    | undefined;
  afterCreate?: ((sandbox: Sandbox) => void | Promise<void>) | undefined;
  /** Called with every error the client or a sandbox raises. */
  onError?: ((error: SandboxError, context: { operation: string; provider: string }) => void) | undefined;
  onDestroy?: ((info: { id: string; provider: string }) => void | Promise<void>) | undefined;
}

/** A plugin: a named bundle of hooks. */
export interface SandboxPlugin {
  readonly name: string;
  readonly hooks?: SandboxHooks | undefined;
}

/** Options of `createSandboxClient`. */
export interface SandboxClientOptions<
  TProvider extends SandboxProvider = SandboxProvider,
  TEmulate extends LossyEmulation = never,
> {
  /** The provider sandboxes are created with. */
  provider: TProvider;
  /** Tried in order when `create` fails — only for creates that carry an `idempotencyKey`. */
  fallback?: readonly SandboxProvider[] | undefined;
  retry?: RetryOptions | undefined;
  hooks?: SandboxHooks | undefined;
  plugins?: readonly SandboxPlugin[] | undefined;
  /** Opt-in lossy emulations: snapshot/fork via a workdir tarball, codeInterpreter via a runner. */
  emulate?: readonly TEmulate[] | undefined;
  /** Merged under every create's metadata. */
  defaultMetadata?: Readonly<Record<string, string>> | undefined;
  /**
   * Hide every driver method the core can emulate, so the emulations run on the real backend.
   * For conformance runs; not for production.
   */
  primitivesOnly?: boolean | undefined;
}

/** The effective level after opt-in emulation: an unsupported lossy capability the user opted into becomes emulated. */
export type EffectiveCapabilities<TCaps extends CapabilityMap, TEmulate extends CapabilityName> = {
  readonly [K in CapabilityName]: K extends TEmulate
    ? TCaps[K] extends "unsupported"
      ? "emulated"
      : TCaps[K]
    : TCaps[K];
};

/** A capability map where every level is any level: what a sandbox from an unknown provider has. */
export type AnyCapabilities = { readonly [K in CapabilityName]: CapabilityLevel };

/** Per-call options of client operations. */
export interface CallOptions {
  signal?: AbortSignal | undefined;
}

/**
 * The entry point: creates, connects to, lists and reaps sandboxes of one provider (plus fallbacks).
 * `await using client = createSandboxClient(...)` disposes it when the block ends.
 */
export interface SandboxClient<
  TCaps extends CapabilityMap = CapabilityMap,
  TMethods extends KnownMethods = UnknownMethods,
  THonours extends SpecField = SpecField,
> extends AsyncDisposable {
  /** The provider's name. */
  readonly provider: string;
  /** The effective capabilities (after emulation). */
  readonly capabilities: Capabilities<TCaps>;
  /**
   * Creates a sandbox. A spec field the provider refuses fails at compile time where its capability map
   * or its honoured fields say so (`volumes` on local), and always with `Validation` before any call.
   */
  create(spec?: SpecFor<TCaps, THonours>): Promise<Sandbox<TCaps, TMethods>>;
  /** Attaches to a sandbox by `"<provider>:<native id>"` or native id; `NotFound` when it does not exist. */
  connect(id: string, options?: CallOptions): Promise<Sandbox<TCaps, TMethods>>;
  /** Lists sandboxes; every filter field is honoured. Requires `list`. */
  list(filter?: ListFilter & CallOptions): AsyncIterable<SandboxInfo>;
  /** Stops (or destroys, where stop is unsupported) sandboxes whose ttl has passed; returns what it reaped. */
  reap(options?: CallOptions): Promise<SandboxInfo[]>;
  /** Releases the provider's clients and sockets. */
  dispose(): Promise<void>;
  /** Disposes the client: what `await using` calls at the end of its block. */
  [Symbol.asyncDispose](): Promise<void>;
}
