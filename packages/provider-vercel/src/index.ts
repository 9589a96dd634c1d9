export type { VercelCapabilities } from "./vercel-capabilities.js";
export { vercelCapabilities, vercelFlags, vercelHonours } from "./vercel-capabilities.js";
export { mapVercelError } from "./vercel-errors.js";
export { VERCEL_PROVIDER_NAME } from "./vercel-names.js";
export type { VercelCredentials, VercelProviderOptions } from "./vercel-options.js";
export { DEFAULT_RUNTIME, DEFAULT_TIMEOUT_MS, VERCEL_ENV } from "./vercel-options.js";
export type { VercelProvider, VercelSandboxNative } from "./vercel-provider.js";
export { vercel } from "./vercel-provider.js";
export { VERCEL_API_ORIGIN } from "./vercel-sdk.js";
