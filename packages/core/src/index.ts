/**
 * `@sbox/core`: one TypeScript API over code-sandbox providers. Users create a client with a provider and
 * work with the `Sandbox` facade; providers implement the driver spec from `@sbox/core/spec`.
 */

export type {
  CapabilityArea,
  CapabilityDescription,
  EmulationDescription,
} from "./capabilities/capability-descriptions.js";
export {
  CAPABILITY_AREAS,
  CAPABILITY_DESCRIPTIONS,
  EMULATION_DESCRIPTIONS,
  FLAG_DESCRIPTIONS,
} from "./capabilities/capability-descriptions.js";
export type { LossyEmulation } from "./capabilities/capability-emulation.js";
export {
  AUTOMATIC_EMULATIONS,
  isAutomaticEmulation,
  isLossyEmulation,
  LOSSY_EMULATIONS,
  NEVER_EMULATED,
} from "./capabilities/capability-emulation.js";
export type { ResolvedCapabilities, ResolveOptions } from "./capabilities/resolve-capabilities.js";
export { resolveCapabilities } from "./capabilities/resolve-capabilities.js";
export type * from "./client/client-types.js";
export type { ClientFor, MergedCapabilities } from "./client/create-sandbox-client.js";
export { createSandboxClient } from "./client/create-sandbox-client.js";
export type * from "./client/spec-for.js";
export { EXPIRES_AT_METADATA_KEY, IDEMPOTENCY_KEY_METADATA_KEY } from "./client/validate-spec.js";
export type * from "./sandbox/method-gates.js";
export type * from "./sandbox/sandbox-types.js";
export * from "./spec/index.js";
