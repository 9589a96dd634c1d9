export { minimalShCapabilities } from "./minimal-sh-capabilities.js";
export type { MinimalShOptions } from "./minimal-sh-provider.js";
export { minimalShProvider } from "./minimal-sh-provider.js";
export type { MinimalShRecord } from "./minimal-sh-store.js";
