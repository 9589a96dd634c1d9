import type { CapabilityLevel, CapabilityMap } from "../capabilities/capability-names.js";
import type { EgressPolicy, SandboxResources, SandboxSpec, SpecField } from "../spec/sandbox-spec.js";

/** True when the level is exactly `unsupported` (not when it may be). */
type Refuses<TLevel extends CapabilityLevel> = [TLevel] extends ["unsupported"] ? true : false;

/** True when `F` is certainly not honoured (the provider's type names its honoured fields without it). */
type NotHonoured<F extends SpecField, THonours extends SpecField> = [F] extends [THonours] ? false : true;

/** A spec field that cannot be given: `undefined` at most. */
type Never<T> = { readonly [K in keyof T]?: undefined };

/**
 * Fields a provider refuses, by what its types say: a field whose capability the map declares unsupported
 * (`volumes`, `region`, `secrets`, `resources.gpu`, a network policy other than allow-all), or a field
 * the provider's type does not list among the honoured ones (`template` on local).
 */
type RefusedTop<TCaps extends CapabilityMap, THonours extends SpecField> =
  | (Refuses<TCaps["volumes"]> extends true
      ? "volumes"
      : NotHonoured<"volumes", THonours> extends true
        ? "volumes"
        : never)
  | (Refuses<TCaps["region"]> extends true
      ? "region"
      : NotHonoured<"region", THonours> extends true
        ? "region"
        : never)
  | (Refuses<TCaps["secretsVault"]> extends true
      ? "secrets"
      : NotHonoured<"secrets", THonours> extends true
        ? "secrets"
        : never)
  | (NotHonoured<"template", THonours> extends true ? "template" : never)
  | (NotHonoured<"name", THonours> extends true ? "name" : never)
  | (NotHonoured<"ports", THonours> extends true ? "ports" : never);

type ResourceField = "vcpus" | "memoryMB" | "diskMB" | "gpu";

type RefusedResource<TCaps extends CapabilityMap, THonours extends SpecField> = {
  [R in ResourceField]: R extends "gpu"
    ? Refuses<TCaps["gpu"]> extends true
      ? R
      : NotHonoured<"resources.gpu", THonours> extends true
        ? R
        : never
    : NotHonoured<`resources.${R}` & SpecField, THonours> extends true
      ? R
      : never;
}[ResourceField];

/** Network policies a spec may ask for: only allow-all where egress cannot be controlled. */
type NetworkFor<TCaps extends CapabilityMap, THonours extends SpecField> =
  Refuses<TCaps["egressControl"]> extends true
    ? { readonly egress: "allow-all" }
    : NotHonoured<"network", THonours> extends true
      ? { readonly egress: "allow-all" }
      : { readonly egress: EgressPolicy };

/**
 * The spec a client of a provider with capability map `TCaps` (and honoured fields `THonours`) accepts:
 * `SandboxSpec` with the fields the provider refuses typed `undefined`, so giving them fails at compile
 * time where the types can tell — and, as ever, with a `Validation` error before any provider call where
 * they cannot.
 */
export type SpecFor<TCaps extends CapabilityMap, THonours extends SpecField = SpecField> = [
  RefusedTop<TCaps, THonours> | RefusedResource<TCaps, THonours>,
] extends [never]
  ? Omit<SandboxSpec, "network"> & { network?: NetworkFor<TCaps, THonours> | undefined }
  : Omit<SandboxSpec, RefusedTop<TCaps, THonours> | "resources" | "network"> &
      Never<Pick<SandboxSpec, RefusedTop<TCaps, THonours>>> & {
        resources?:
          | (Omit<SandboxResources, RefusedResource<TCaps, THonours>> &
              Never<Pick<SandboxResources, RefusedResource<TCaps, THonours>>>)
          | undefined;
        network?: NetworkFor<TCaps, THonours> | undefined;
      };

/** The spec fields a provider's type says it honours (every field when it does not say). */
export type HonoursOf<TProvider> = TProvider extends { readonly honours: readonly (infer F)[] }
  ? F extends SpecField
    ? F
    : SpecField
  : SpecField;
