/**
 * `@sbox/emulators`: local emulators of sandbox vendors' APIs. Each vendor has its own subpath
 * (`@sbox/emulators/e2b`, `@sbox/emulators/fly`, `@sbox/emulators/kubernetes`); this entry point holds the shared parts: the backend seam,
 * the HTTP plumbing with fault injection, the clock, and the registry `sbox emulate` uses.
 */

export type {
  BackendDefaults,
  EmulatorBackend,
  EmulatorBackendInput,
  EmulatorBackendName,
} from "./backend.js";
export { EMULATOR_BACKEND_NAMES, openBackend } from "./backend.js";
export type { EmulatorClock, EmulatorTimer } from "./clock.js";
export { systemClock } from "./clock.js";
export type {
  CommonEmulatorOptions,
  EmulatorVendor,
  RunningEmulator,
} from "./emulator-registry.js";
export { EMULATORS } from "./emulator-registry.js";
export type {
  EmulatorHttpServer,
  FaultInjector,
  FaultResponse,
  FaultRule,
  HttpServerOptions,
  RequestContext,
  RequestLogEntry,
  RequestSummary,
} from "./http-server.js";
export { createFaultInjector, REQUEST_LOG_LIMIT, startHttpServer } from "./http-server.js";
export type { KitFaultHook, KitRemoteFault } from "./kit-faults.js";
export { kitFaultHook } from "./kit-faults.js";
