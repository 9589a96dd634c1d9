/** The provider name, as used in ids and errors. */
export const VERCEL_PROVIDER_NAME = "vercel";
