/**
 * `@sbox/provider-fly`: sbox sandboxes on Fly Machines, through the public Machines REST API with plain
 * `fetch`.
 */

export type {
  FlyCreateMachineRequest,
  FlyExecRequest,
  FlyExecResponse,
  FlyMachine,
  FlyMachineConfig,
  FlyMachineService,
  FlyMachineStateName,
} from "./fly-api-types.js";
export { flyCapabilities, flyFlags } from "./fly-capabilities.js";
export type { FlyMachineHandle } from "./fly-lifecycle.js";
export { FLY_IDEMPOTENCY_METADATA_KEY, FLY_MANAGED_METADATA_KEY, FLY_PROVIDER_NAME } from "./fly-names.js";
export type { FlyPreviewUrl, FlyProviderOptions, FlyRetryOptions } from "./fly-options.js";
export { DEFAULT_FLY_API_BASE_URL, DEFAULT_FLY_IMAGE } from "./fly-options.js";
export type { FlyProvider } from "./fly-provider.js";
export { fly } from "./fly-provider.js";
export { sandboxStateOf } from "./fly-states.js";
