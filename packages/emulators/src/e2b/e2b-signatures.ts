/**
 * envd's signed file URLs: `signature = "v1_" + base64(sha256("<path>:<operation>:<user>:<access token>"
 * [+ ":<expiration>"]))` without padding, checked in constant time, then the expiration (Unix seconds).
 * A request carrying the access token header needs no signature; one carrying a wrong token fails.
 */
import { createHash, timingSafeEqual } from "node:crypto";

/** The operation a signature allows. */
export type SignedOperation = "read" | "write";

/** The signature envd expects for these parameters. */
export function expectedSignature(
  path: string,
  operation: SignedOperation,
  user: string,
  accessToken: string,
  expiration: number | undefined,
): string {
  const parts = [path, operation, user, accessToken];
  if (expiration !== undefined) parts.push(String(expiration));
  const digest = createHash("sha256").update(parts.join(":"), "utf8").digest("base64").replace(/=+$/, "");
  return `v1_${digest}`;
}

function equal(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.byteLength === right.byteLength && timingSafeEqual(left, right);
}

/** The signature parts of a `/files` URL. */
export interface FileUrlParameters {
  readonly path: string;
  readonly username: string | undefined;
  readonly signature: string | undefined;
  readonly expiration: string | undefined;
}

/** Reads the signature parameters of a `/files` URL. */
export function fileUrlParameters(url: URL): FileUrlParameters {
  return {
    path: url.searchParams.get("path") ?? "",
    username: url.searchParams.get("username") ?? undefined,
    signature: url.searchParams.get("signature") ?? undefined,
    expiration: url.searchParams.get("signature_expiration") ?? undefined,
  };
}

/** True when `params` carry a valid (not yet checked for expiry) signature made with `accessToken`. */
export function signatureMatches(
  params: FileUrlParameters,
  operation: SignedOperation,
  accessToken: string,
): boolean {
  if (params.signature === undefined) return false;
  const expiration = params.expiration === undefined ? undefined : Number(params.expiration);
  if (expiration !== undefined && !Number.isInteger(expiration)) return false;
  return equal(
    expectedSignature(params.path, operation, params.username ?? "", accessToken, expiration),
    params.signature,
  );
}

/**
 * envd's check of a `/files` request: `undefined` when allowed, else the 401 message. Sandboxes created
 * without `secure` have no access token and allow everything.
 */
export function checkFileAccess(
  params: FileUrlParameters,
  operation: SignedOperation,
  accessToken: string | undefined,
  tokenHeader: string | undefined,
  now: number,
): string | undefined {
  if (!accessToken) return undefined;
  if (tokenHeader !== undefined && tokenHeader !== "") {
    return equal(tokenHeader, accessToken) ? undefined : "access token present in header but does not match";
  }
  if (params.signature === undefined) return "missing signature query parameter";
  if (!signatureMatches(params, operation, accessToken)) return "invalid signature";
  if (params.expiration !== undefined && Number(params.expiration) < Math.floor(now / 1000)) {
    return "signature is already expired";
  }
  return undefined;
}
