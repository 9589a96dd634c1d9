/**
 * Authentication as the Machines API does it. Tokens come in two kinds (superfly/fly-go tokens.Parse):
 * macaroons (`fm1r_…`, `fm1a_…`, `fm2_…`, what `fly tokens create` prints, prefixed `FlyV1 `) travel with
 * the `FlyV1` scheme, several of them comma-separated; user tokens (what `fly auth token` printed before
 * macaroons) travel with `Bearer`. A macaroon sent with `Bearer`, a user token sent with `FlyV1`, a
 * missing header or an unknown token is 401.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";

/** The macaroon prefixes fly-go recognises. */
const MACAROON_PREFIXES = ["fm1r", "fm1a", "fm2"];

/** True for a macaroon token (`fm2_…`). */
export function isMacaroon(token: string): boolean {
  return MACAROON_PREFIXES.includes(token.split("_", 1)[0] ?? "");
}

/** A fresh macaroon-shaped token (`fm2_<random>`), like the ones `fly tokens create` prints. */
export function newFlyToken(): string {
  return `fm2_${randomBytes(48).toString("base64url")}`;
}

function equal(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.byteLength === right.byteLength && timingSafeEqual(left, right);
}

/**
 * Checks an `Authorization` header against the accepted tokens; `undefined` when it passes, else the
 * 401 message (never quoting the header).
 */
export function checkAuthorization(
  header: string | undefined,
  accepted: readonly string[],
): string | undefined {
  if (!header) return "You must be authenticated to view this.";
  const space = header.indexOf(" ");
  const scheme = space < 0 ? "" : header.slice(0, space);
  const rest = space < 0 ? header : header.slice(space + 1);
  const tokens = rest
    .split(",")
    .map((token) => token.trim())
    .filter(Boolean);
  if (tokens.length === 0) return "You must be authenticated to view this.";
  if (scheme === "FlyV1") {
    if (!tokens.every(isMacaroon))
      return "Authenticate: token validation error: the FlyV1 scheme carries macaroons only";
  } else if (scheme === "Bearer") {
    if (tokens.some(isMacaroon)) {
      return "Authenticate: token validation error: macaroon tokens are sent with the FlyV1 scheme, not Bearer";
    }
  } else {
    return "Authenticate: unsupported authorization scheme (use FlyV1 or Bearer)";
  }
  const known = tokens.some((token) => accepted.some((candidate) => equal(candidate, token)));
  return known ? undefined : "Authenticate: token validation error";
}
