/**
 * The limits Vercel Sandbox enforces, as its documentation states them (vercel.com/docs/vercel-sandbox):
 * a session lives 5 minutes unless `timeout` says otherwise, at most 45 minutes on Hobby and 5 hours on Pro
 * and Enterprise (`extendTimeout` cannot go beyond the plan's maximum either); 1 to 8 vCPUs with 2048 MB of
 * memory each; at most 4 exposed ports; the runtimes of the SDK's `RUNTIMES` type (`node22`, `node24`, `node26`, `python3.13`) and its managed
 * images (`vercel/sandbox/<image>`).
 */

/** A session's lifetime when `timeout` is absent (5 minutes). */
export const DEFAULT_SESSION_TIMEOUT_MS = 300_000;

/** The longest session lifetime per plan. */
export const PLAN_MAX_TIMEOUT_MS: { readonly hobby: number; readonly pro: number } = {
  hobby: 2_700_000,
  pro: 18_000_000,
};

/** The plans whose limits the emulator can apply. */
export type VercelPlan = "hobby" | "pro";

/** vCPUs a sandbox may ask for. */
export const VCPU_RANGE = { min: 1, max: 8 } as const;

/** Memory per vCPU, in MB. */
export const MEMORY_PER_VCPU_MB = 2048;

/** vCPUs of a sandbox created without `resources`. */
export const DEFAULT_VCPUS = 2;

/** The most ports one sandbox exposes. */
export const MAX_PORTS = 4;

/** The runtimes `/v2/sandboxes` accepts. */
export const RUNTIMES: readonly string[] = ["node22", "node24", "node26", "python3.13"];

/** The managed images `/v3/sandboxes` accepts (`vercel/sandbox/<name>`), the SDK's `ManagedImage`. */
export const MANAGED_IMAGES: readonly string[] = [
  "universal",
  "node:22",
  "node:24",
  "node:26",
  "python:3.14",
  "ubuntu",
  "arch",
];

/** The working directory of every session (where relative paths resolve and commands start). */
export const SANDBOX_CWD = "/vercel/sandbox";

/** The region sessions run in (the SDK's `DEFAULT_SANDBOX_REGION`). */
export const DEFAULT_REGION = "iad1";
