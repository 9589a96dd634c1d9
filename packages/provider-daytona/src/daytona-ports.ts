import { NotSupportedError, type PortInfo, SandboxError } from "@sbox/core/spec";
import type { DaytonaHandle } from "./daytona-lifecycle.js";
import { DAYTONA_PROVIDER_NAME } from "./daytona-names.js";
import type { ResolvedDaytonaOptions } from "./daytona-options.js";
import { bounded } from "./daytona-sdk.js";

/** The longest a signed preview URL lives on Daytona (24 hours): what a non-private port gets. */
export const DAYTONA_SIGNED_PREVIEW_SECONDS: number = 24 * 60 * 60;

/** The header a private preview URL wants its token in (Daytona's proxy also reads it from a cookie). */
export const DAYTONA_PREVIEW_TOKEN_HEADER: string = "X-Daytona-Preview-Token";

function checkPort(port: number): void {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new SandboxError("Validation", `daytona: port must be an integer from 1 to 65535, got ${port}`, {
      provider: DAYTONA_PROVIDER_NAME,
    });
  }
}

/**
 * `ports.expose` on Daytona's preview links. Daytona decides privacy per sandbox (`public` at create; sbox
 * creates private ones), so:
 * - a private port is the sandbox's preview link (`GET /sandbox/{id}/ports/{port}/preview-url`), whose URL
 *   answers only requests carrying the returned token in `X-Daytona-Preview-Token`;
 * - a non-private port of a private sandbox is a signed preview URL (`…/signed-preview-url`): the token is
 *   part of the URL, so anyone holding it gets through, for 24 hours (Daytona's longest); expose again for a
 *   fresh one. A public sandbox's preview link needs nothing, and is used as it is.
 * Every token handed out is remembered in `secrets`, so no error repeats it.
 */
export async function exposeDaytonaPort(
  options: ResolvedDaytonaOptions,
  handle: DaytonaHandle,
  port: number,
  isPrivate: boolean,
  signal: AbortSignal,
  secrets: Set<string>,
): Promise<PortInfo> {
  checkPort(port);
  const sandbox = handle.native;
  if (isPrivate || sandbox.public) {
    if (isPrivate && sandbox.public) {
      throw new NotSupportedError(
        "ports.expose({ private: true })",
        DAYTONA_PROVIDER_NAME,
        "this Daytona sandbox was created public, so every preview URL of it is open",
      );
    }
    const link = await bounded(
      sandbox.getPreviewLink(port),
      signal,
      options.requestTimeoutMs,
      "ports.expose",
    );
    if (!isPrivate) return { port, url: link.url };
    if (!link.token) {
      throw new SandboxError(
        "Provider",
        "daytona: the preview link of a private sandbox came without a token",
        {
          provider: DAYTONA_PROVIDER_NAME,
        },
      );
    }
    secrets.add(link.token);
    return { port, url: link.url, token: link.token };
  }
  const signed = await bounded(
    sandbox.getSignedPreviewUrl(port, DAYTONA_SIGNED_PREVIEW_SECONDS),
    signal,
    options.requestTimeoutMs,
    "ports.expose",
  );
  if (signed.token) secrets.add(signed.token);
  return { port, url: signed.url };
}
