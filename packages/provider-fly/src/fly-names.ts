/** The provider's name: ids look like `"fly:<machine id>"`. */
export const FLY_PROVIDER_NAME = "fly";

/** Metadata key set on every machine this provider creates, so `list()` leaves the app's other machines out. */
export const FLY_MANAGED_METADATA_KEY = "sbox-managed";

/** Metadata key carrying a create's idempotency key, so a retried create finds the machine it made. */
export const FLY_IDEMPOTENCY_METADATA_KEY = "sbox-idempotency-key";
