import type { SandboxSpec, SandboxState } from "./sandbox-spec.js";

/** Every state `getInfo()` can report, in lifecycle order (for validating filters and listing choices). */
export const SANDBOX_STATES: readonly SandboxState[] = [
  "starting",
  "running",
  "paused",
  "stopped",
  "destroyed",
  "error",
  "unknown",
];

/**
 * The fields of a `SandboxSpec` that describe the sandbox itself; `idempotencyKey` and `signal`, which
 * only shape the create call, are not among them.
 */
export const SANDBOX_SPEC_FIELDS: readonly (keyof SandboxSpec)[] = [
  "template",
  "name",
  "env",
  "metadata",
  "ttlMs",
  "resources",
  "ports",
  "network",
  "volumes",
  "region",
  "secrets",
];
