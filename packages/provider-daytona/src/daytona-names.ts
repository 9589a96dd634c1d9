/** The provider's name, the prefix of its sandbox ids (`daytona:<id>`). */
export const DAYTONA_PROVIDER_NAME = "daytona";

/** Label on every sandbox this provider creates, so listings and cleanup see only sbox's own. */
export const DAYTONA_MANAGED_LABEL = "sbox-managed";

/** Label carrying a create's idempotency key, so a retried create finds the sandbox it made. */
export const DAYTONA_IDEMPOTENCY_LABEL = "sbox-idempotency-key";

/**
 * Label carrying a random token per create call: when the answer to a create is lost (the service made the
 * sandbox, the client never heard), the provider finds the sandbox by it and deletes it before reporting.
 */
export const DAYTONA_CREATE_TOKEN_LABEL = "sbox-create-token";

/** Label carrying the instant a ttl given at create runs out (ISO 8601), read back as `expiresAt`. */
export const DAYTONA_EXPIRES_AT_LABEL = "sbox-expires-at";

/** Label the SDK adds to every sandbox it creates (the code-run language). */
export const DAYTONA_SDK_LANGUAGE_LABEL = "code-toolbox-language";

/** Labels of sbox's and the SDK's own bookkeeping: not part of a sandbox's metadata as users see it. */
export const DAYTONA_INTERNAL_LABELS: readonly string[] = [
  DAYTONA_MANAGED_LABEL,
  DAYTONA_IDEMPOTENCY_LABEL,
  DAYTONA_CREATE_TOKEN_LABEL,
  DAYTONA_EXPIRES_AT_LABEL,
  DAYTONA_SDK_LANGUAGE_LABEL,
];
