/**
 * Daytona's preview proxy: traffic for `<base>/preview/<sandboxId>/<port>/…` (Daytona's
 * `https://<port>-<sandboxId>.proxy.daytona.works`) and for signed URLs `<base>/preview/<token>/<port>/…`
 * (Daytona's `https://<port>-<token>.proxy…`) reaches whatever listens on that port inside the sandbox,
 * through the backend's way in or the in-sandbox relay. As Daytona's proxy (apps/proxy/pkg/proxy/auth.go)
 * does, a private sandbox's port wants its preview token in `X-Daytona-Preview-Token` or the
 * `DAYTONA_SANDBOX_AUTH_KEY` query parameter (both removed before forwarding); a signed URL carries its own
 * token and stops working when it expires (1 s to 24 h, default 60 s); a public sandbox needs nothing.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { EmulatorClock } from "../clock.js";
import { forwardedHeaders, forwardToSandboxPort } from "../sandbox-relay.js";
import { DaytonaApiError, type DaytonaFleet, type DaytonaSandboxRecord } from "./daytona-fleet.js";

/** The header Daytona's proxy reads a preview token from. */
const PREVIEW_TOKEN_HEADER = "x-daytona-preview-token";
/** The query parameter Daytona's proxy reads a preview token from. */
const PREVIEW_TOKEN_QUERY = "DAYTONA_SANDBOX_AUTH_KEY";
/** Bounds of a signed preview URL's life (Daytona: "between 1 second and 24 hours"). */
const SIGNED_MAX_SECONDS = 24 * 60 * 60;
const SIGNED_DEFAULT_SECONDS = 60;

interface SignedPreview {
  readonly sandboxId: string;
  readonly port: number;
  readonly expiresAt: number;
}

/** Signed preview tokens handed out, each for one sandbox port until it expires. */
export class DaytonaSignedPreviews {
  private readonly tokens = new Map<string, SignedPreview>();
  constructor(private readonly clock: EmulatorClock) {}

  /** A fresh token (16 lowercase alphanumerics, as Daytona's) for `port` of a sandbox. */
  mint(sandboxId: string, port: number, expiresInSeconds: string | null): string {
    const seconds = expiresInSeconds === null ? SIGNED_DEFAULT_SECONDS : Number(expiresInSeconds);
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > SIGNED_MAX_SECONDS) {
      throw new DaytonaApiError(400, "expiresInSeconds must be between 1 second and 24 hours");
    }
    this.prune();
    const token = randomBytes(12).toString("base64url").replace(/[-_]/g, "0").slice(0, 16).toLowerCase();
    this.tokens.set(token, { sandboxId, port, expiresAt: this.clock.now() + seconds * 1000 });
    return token;
  }

  /** The sandbox a live token of `port` opens, if any. */
  resolve(token: string, port: number): string | undefined {
    const signed = this.tokens.get(token);
    if (!signed || signed.port !== port || signed.expiresAt <= this.clock.now()) return undefined;
    return signed.sandboxId;
  }

  private prune(): void {
    const now = this.clock.now();
    for (const [token, signed] of this.tokens) if (signed.expiresAt <= now) this.tokens.delete(token);
  }
}

/** What the preview proxy reads. */
export interface DaytonaPreviewContext {
  readonly fleet: DaytonaFleet;
  readonly signed: DaytonaSignedPreviews;
}

function refuse(res: ServerResponse, req: IncomingMessage, status: number, message: string): void {
  req.resume();
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8" }).end(message);
}

function findSandbox(context: DaytonaPreviewContext, id: string): DaytonaSandboxRecord | undefined {
  try {
    return context.fleet.find(id);
  } catch {
    return undefined;
  }
}

/** Serves one request under `/preview/`. */
export async function serveDaytonaPreview(
  context: DaytonaPreviewContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const match = /^\/preview\/([^/]+)\/(\d{1,5})(\/.*)?$/.exec(url.pathname);
  const port = Number(match?.[2]);
  if (!match || port < 1 || port > 65535) return refuse(res, req, 404, "not a preview URL");
  let key: string;
  try {
    key = decodeURIComponent(match[1]!);
  } catch {
    return refuse(res, req, 404, "not a preview URL");
  }
  const signedId = context.signed.resolve(key, port);
  const record = findSandbox(context, signedId ?? key);
  if (!record || record.state === "destroyed") return refuse(res, req, 404, "sandbox not found");
  if (!signedId && !record.public) {
    const header = req.headers[PREVIEW_TOKEN_HEADER];
    const given =
      (typeof header === "string" ? header : undefined) ?? url.searchParams.get(PREVIEW_TOKEN_QUERY);
    const expected = record.previewTokens.get(port);
    if (given === null || given === undefined) {
      return refuse(res, req, 401, "authentication required: X-Daytona-Preview-Token");
    }
    if (expected === undefined || given !== expected)
      return refuse(res, req, 401, "preview token is invalid");
  }
  if (record.state !== "started" || !record.sandbox) {
    return refuse(res, req, 400, `sandbox is not running (state ${record.state})`);
  }
  // Preview traffic is activity: it resets the auto-stop countdown, as on Daytona.
  context.fleet.touch(record);
  url.searchParams.delete(PREVIEW_TOKEN_QUERY);
  req.url = `${match[3] ?? "/"}${url.search}`;
  const headers = forwardedHeaders(req, `localhost:${port}`, [PREVIEW_TOKEN_HEADER]);
  const failure = await forwardToSandboxPort(record.sandbox, port, req, res, headers);
  if (failure === "closed") return refuse(res, req, 502, `no server is listening on port ${port}`);
  if (failure === "broken") res.destroy();
}
