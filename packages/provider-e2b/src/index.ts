export type { E2BCapabilities } from "./e2b-capabilities.js";
export { e2bCapabilities, e2bFlags, e2bHonours } from "./e2b-capabilities.js";
export type { E2BErrorContext, E2BPlane } from "./e2b-errors.js";
export { toE2BError } from "./e2b-errors.js";
export type { E2BPreviewUrl, E2BProviderOptions } from "./e2b-options.js";
export { API_KEY_ENV, DEFAULT_TEMPLATE, DEFAULT_TIMEOUT_MS } from "./e2b-options.js";
export type { E2BProvider, E2BSandboxNative } from "./e2b-provider.js";
export { e2b } from "./e2b-provider.js";
