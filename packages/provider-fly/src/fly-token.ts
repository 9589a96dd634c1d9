/**
 * The Authorization header for a Fly API token, the way Fly's own clients build it (superfly/fly-go,
 * tokens.Parse and FlapsHeader): a token may be pasted with its scheme (`FlyV1 fm2_…` as `fly tokens
 * create` prints it, or `Bearer …`) and may hold several comma-separated tokens. Macaroons (`fm1r_`,
 * `fm1a_`, `fm2_`) are sent with the `FlyV1` scheme, and only they when there are any; other tokens (the
 * older `fly auth token` kind) with `Bearer`. The scheme is never doubled.
 */

const MACAROON_PREFIXES = ["fm1r", "fm1a", "fm2"];

function isMacaroon(token: string): boolean {
  return MACAROON_PREFIXES.includes(token.split("_", 1)[0] ?? "");
}

/** Strips a leading `FlyV1 ` or `Bearer ` (any case) from a pasted token. */
export function stripScheme(token: string): string {
  return token.trim().replace(/^(?:flyv1|bearer)\s+/i, "");
}

/** The value of the `Authorization` header for `token`. */
export function authorizationHeader(token: string): string {
  const tokens = stripScheme(token)
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean);
  const macaroons = tokens.filter(isMacaroon);
  if (macaroons.length > 0) return `FlyV1 ${macaroons.join(",")}`;
  return `Bearer ${tokens.join(",")}`;
}

/** The bare token parts of `token`, to scrub from messages. */
export function tokenSecrets(token: string): string[] {
  return [
    token,
    ...stripScheme(token)
      .split(",")
      .map((part) => part.trim()),
  ].filter((part) => part.length >= 8);
}
