/** `@sbox/provider-daytona`: sbox sandboxes on Daytona, through the official `@daytonaio/sdk`. */

export type { DaytonaCapabilities } from "./daytona-capabilities.js";
export {
  daytonaCapabilities,
  daytonaFlags,
  daytonaHonours,
  daytonaHonoursFor,
} from "./daytona-capabilities.js";
export type { DaytonaHandle } from "./daytona-lifecycle.js";
export {
  DAYTONA_CREATE_TOKEN_LABEL,
  DAYTONA_EXPIRES_AT_LABEL,
  DAYTONA_IDEMPOTENCY_LABEL,
  DAYTONA_MANAGED_LABEL,
  DAYTONA_PROVIDER_NAME,
} from "./daytona-names.js";
export type { DaytonaProviderOptions } from "./daytona-options.js";
export { DAYTONA_API_KEY_ENV } from "./daytona-options.js";
export { DAYTONA_PREVIEW_TOKEN_HEADER, DAYTONA_SIGNED_PREVIEW_SECONDS } from "./daytona-ports.js";
export type { DaytonaProvider, DaytonaSandboxNative } from "./daytona-provider.js";
export { daytona } from "./daytona-provider.js";
export { sandboxStateOf } from "./daytona-states.js";
export type { DaytonaIntervals } from "./daytona-ttl.js";
export { intervalsFor } from "./daytona-ttl.js";
