/**
 * Provider metadata the manager puts on every sandbox it creates, so that `reconcile` can find a sandbox
 * whose record never learnt its id (a crash between "provider created" and "record running").
 */
export const RECORD_LABEL = "sbox-manager-record";

/** Provider metadata naming the manager namespace; `reconcile` lists sandboxes by it. */
export const NAMESPACE_LABEL = "sbox-manager-namespace";

/** Metadata keys users may not set in `spec.metadata`. */
export const RESERVED_METADATA_PREFIX = "sbox-manager-";
