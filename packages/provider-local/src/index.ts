/**
 * `@sbox/provider-local`: the embedded default sbox provider. Sandboxes are directories under a state root
 * and their commands are host processes, isolated with bubblewrap on Linux when it is available.
 */

export { localCapabilities, localFlags, localUnisolatedCapabilities } from "./local-capabilities.js";
export type { LocalEgress, LocalIsolationRequest, LocalMount, LocalOptions } from "./local-options.js";
export type { LocalHonouredField, LocalProvider, LocalSandboxHandle } from "./local-provider.js";
export { local } from "./local-provider.js";
