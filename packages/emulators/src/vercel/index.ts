/**
 * `@sbox/emulators/vercel`: an offline Vercel Sandbox API for `@vercel/sandbox` and provider-vercel.
 */
export type { VercelEmulator, VercelEmulatorOptions } from "./vercel-emulator.js";
export {
  startVercelEmulator,
  VERCEL_API_ORIGIN,
  VERCEL_DOCKER_DEFAULT_IMAGE,
  vercelFetch,
} from "./vercel-emulator.js";
export type { VercelPlan } from "./vercel-limits.js";
export { DEFAULT_SESSION_TIMEOUT_MS, PLAN_MAX_TIMEOUT_MS } from "./vercel-limits.js";
