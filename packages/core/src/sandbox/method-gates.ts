import type { CapabilityLevel, CapabilityMap } from "../capabilities/capability-names.js";
import type { PortInfo } from "../spec/provider-spec.js";

/** `sandbox.ports.fetch`: fetches from a port through the provider (`proxiedFetch`). */
export type PortFetch = (port: number, path: string, init?: RequestInit) => Promise<Response>;

/** `sandbox.ports.unexpose`: stops exposing a port (there when the provider has `doUnexposePort`). */
export type PortUnexpose = (port: number) => Promise<void>;

/**
 * What the type of a provider says about the optional methods no capability decides: `true` when its
 * type has the driver method, `false` when its type says it has none (`doUnexposePort?: undefined`),
 * `undefined` when its type does not say (a facade method is then possibly undefined).
 */
export interface KnownMethods {
  readonly unexposePort: boolean | undefined;
}

/** Nothing known about the optional methods: what a provider of type `SandboxProvider` has. */
export type UnknownMethods = { readonly unexposePort: undefined };

/**
 * What the type `P` says of its driver method `K`: `false` when typed `undefined` (or `never`, as
 * `SandboxProvider & { doUnexposePort?: undefined }` makes it), `true` when required, `undefined` when
 * merely optional (it may or may not be there).
 */
type Presence<P, K extends PropertyKey> = K extends keyof P
  ? [P[K]] extends [undefined]
    ? false
    : // biome-ignore lint/complexity/noBannedTypes: `{}` extends an object type exactly when all its keys are optional.
      {} extends Pick<P, K>
      ? undefined
      : true
  : false;

/** What a provider's type says about its optional methods (see {@link KnownMethods}). */
export type MethodsOf<TProvider> = {
  readonly unexposePort: Presence<TProvider, "doUnexposePort">;
};

/** Gate of one method: the method when `on` is true, undefined when false, possibly undefined otherwise. */
type MethodGate<TOn extends boolean | undefined, TMethod> = TOn extends true
  ? TMethod
  : TOn extends false
    ? undefined
    : TMethod | undefined;

/** Gate of one method by a capability level, as namespaces are gated. */
type LevelGate<TLevel extends CapabilityLevel, TMethod> = [TLevel] extends ["unsupported"]
  ? undefined
  : "unsupported" extends TLevel
    ? TMethod | undefined
    : TMethod;

/**
 * `sandbox.ports` with `fetch` typed `TFetch` and `unexpose` typed `TUnexpose` (each the method, or
 * `undefined` where it is not there).
 */
export interface PortsWith<TFetch extends PortFetch | undefined, TUnexpose extends PortUnexpose | undefined> {
  /** Exposes a port; `private` needs `privatePreview`. */
  expose(port: number, options?: { private?: boolean | undefined }): Promise<PortInfo>;
  /** The exposed ports with their URLs. */
  list(): Promise<PortInfo[]>;
  /** Stops exposing a port, where the provider can (Docker publishes ports for the container's life). */
  readonly unexpose: TUnexpose;
  /** Fetches from a port through the provider (`proxiedFetch`). */
  readonly fetch: TFetch;
}

/**
 * `sandbox.ports` for capability map `TCaps` and what the provider's type says of its methods: `fetch`
 * is there as `proxiedFetch` is (undefined when it is unsupported), `unexpose` as the provider's
 * `doUnexposePort` is — in the type exactly as at runtime, like the namespaces themselves.
 */
export type PortsApiOf<TCaps extends CapabilityMap, TMethods extends KnownMethods> = PortsWith<
  LevelGate<TCaps["proxiedFetch"], PortFetch>,
  MethodGate<TMethods["unexposePort"], PortUnexpose>
>;
