/**
 * Authentication as the Vercel Sandbox API does it. `@vercel/sandbox` sends `Authorization: Bearer <token>`
 * and `?teamId=<team>` on every call, with the project in the body (create) or the query (`projectId` /
 * `project`). The token is either an access token (with `teamId` and `projectId` given alongside it) or a
 * Vercel OIDC token: a JWT whose payload names the team (`owner_id`) and the project (`project_id`), which
 * the SDK reads without verifying. The emulator mints OIDC tokens of that shape (signed with a key of its
 * own, far-off expiry) so the SDK's `VERCEL_OIDC_TOKEN` path works offline too.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** The scope every accepted token is bound to. */
export interface VercelScope {
  readonly teamId: string;
  readonly projectId: string;
}

/** The tokens one emulator accepts. */
export interface VercelAuth {
  readonly scope: VercelScope;
  /** The access token (sent with `teamId` and `projectId`). */
  readonly accessToken: string;
  /** An OIDC token of the SDK's shape for the same scope. */
  readonly oidcToken: string;
  /** `undefined` when `header` carries an accepted token, else the 401/403 answer. */
  check(
    header: string | undefined,
    teamId: string | null,
  ): { status: number; code: string; message: string } | undefined;
}

function base64url(value: string | Buffer): string {
  return Buffer.from(value).toString("base64url");
}

/** A JWT (HS256) with `owner_id`/`project_id` claims, as Vercel's OIDC tokens carry them. */
export function mintOidcToken(scope: VercelScope, key: Buffer, nowMs: number): string {
  const header = base64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
  const iat = Math.floor(nowMs / 1000);
  const payload = base64url(
    JSON.stringify({
      iss: "https://oidc.vercel.com/emulator",
      sub: `owner:${scope.teamId}:project:${scope.projectId}:environment:development`,
      owner_id: scope.teamId,
      project_id: scope.projectId,
      iat,
      // Ten years: the SDK refreshes a token that expires within five minutes, which needs the network.
      exp: iat + 10 * 365 * 24 * 3600,
    }),
  );
  const signature = createHmac("sha256", key).update(`${header}.${payload}`).digest("base64url");
  return `${header}.${payload}.${signature}`;
}

function equal(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.byteLength === right.byteLength && timingSafeEqual(left, right);
}

/** Tokens for `scope`: `accessToken` when given, else a fresh random one. */
export function createVercelAuth(scope: VercelScope, nowMs: number, accessToken?: string): VercelAuth {
  const key = randomBytes(32);
  const token = accessToken ?? `vcp_${randomBytes(24).toString("base64url")}`;
  const oidcToken = mintOidcToken(scope, key, nowMs);
  return {
    scope,
    accessToken: token,
    oidcToken,
    check(header, teamId) {
      const match = /^Bearer (.+)$/.exec(header ?? "");
      if (!match)
        return { status: 401, code: "unauthorized", message: "Missing or invalid authorization header" };
      const presented = match[1]!.trim();
      if (!equal(presented, token) && !equal(presented, oidcToken)) {
        // Never quote the token back.
        return { status: 403, code: "forbidden", message: "Not authorized: the token is invalid or expired" };
      }
      if (teamId !== scope.teamId) {
        return {
          status: 403,
          code: "forbidden",
          message: "Not authorized: the token has no access to this team (teamId)",
        };
      }
      return undefined;
    },
  };
}
