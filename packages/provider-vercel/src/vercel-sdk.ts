import { createProviderFetch, optionalPackageError, SandboxError } from "@sbox/core/spec";
import { VERCEL_PROVIDER_NAME } from "./vercel-names.js";
import { credentialsOf, type ResolvedVercelOptions } from "./vercel-options.js";

/** The `@vercel/sandbox` module, as loaded on first use. */
export type VercelModule = typeof import("@vercel/sandbox");

/** The SDK's sandbox object: what `sandbox.raw()` returns. */
export type VercelSandbox = import("@vercel/sandbox").Sandbox;

/** The API origin the SDK calls (it has no setting for another). */
export const VERCEL_API_ORIGIN = "https://vercel.com/api";

let loading: Promise<VercelModule> | undefined;

/** Loads the SDK on first use; a failed load is not cached. */
export function loadVercel(): Promise<VercelModule> {
  if (!loading) {
    const attempt = import("@vercel/sandbox").catch((error: unknown) => {
      throw optionalPackageError(error, "@vercel/sandbox", "the vercel provider", VERCEL_PROVIDER_NAME);
    });
    loading = attempt;
    attempt.catch(() => {
      if (loading === attempt) loading = undefined;
    });
  }
  return loading;
}

/**
 * A deadline that passed, thrown to the SDK as an `AbortError`: the SDK retries every other failure twice
 * (with back-off), which would triple the caller's deadline. The provider's error mapping unwraps it.
 */
export class VercelDeadlineError extends Error {
  override readonly name = "AbortError";
  constructor(readonly error: SandboxError) {
    super(error.message);
  }
}

/** A day: the bound of a streaming route, whose command's own timeout (or the caller's signal) ends it first. */
const STREAM_TIMEOUT_MS = 24 * 3600_000;

function bodySize(body: RequestInit["body"]): number {
  if (typeof body === "string") return Buffer.byteLength(body);
  if (body instanceof Uint8Array || body instanceof ArrayBuffer) return body.byteLength;
  return 0;
}

/**
 * The deadline of one request: the provider's, except where the answer legitimately takes longer — NDJSON
 * log streams and waits stay open while a command runs (a day: the command's own timeout or the caller's
 * signal ends them first), and a file upload gets a second more per MiB it carries.
 */
function deadlineOf(url: URL, init: RequestInit, requestTimeoutMs: number): number {
  const method = (init.method ?? "GET").toUpperCase();
  if (/\/cmd\/[^/]+\/logs$/.test(url.pathname)) return STREAM_TIMEOUT_MS;
  if (/\/cmd\/[^/]+$/.test(url.pathname) && url.searchParams.get("wait") === "true") return STREAM_TIMEOUT_MS;
  if (
    method === "POST" &&
    /\/cmd$/.test(url.pathname) &&
    typeof init.body === "string" &&
    /"wait":true/.test(init.body)
  ) {
    return STREAM_TIMEOUT_MS;
  }
  return requestTimeoutMs + Math.ceil(bodySize(init.body) / (1 << 20)) * 1000;
}

const fetches = new WeakMap<ResolvedVercelOptions, typeof globalThis.fetch>();

/**
 * The `fetch` every SDK call goes through: requests to `https://vercel.com/api` go to `apiUrl` when set;
 * every request has the provider's deadline (streaming routes excepted), and redirects never carry the
 * token to another origin (core's provider fetch). The SDK's own undici `dispatcher` is dropped so the
 * request goes through the runtime's fetch.
 */
export function sdkFetch(options: ResolvedVercelOptions): typeof globalThis.fetch {
  let cached = fetches.get(options);
  if (cached) return cached;
  const send = createProviderFetch({
    provider: VERCEL_PROVIDER_NAME,
    requestTimeoutMs: options.requestTimeoutMs,
    secrets: () => [options.credentials?.token],
  });
  const base = options.apiUrl?.replace(/\/+$/, "");
  cached = (async (input: string | URL | Request, init?: RequestInit & { dispatcher?: unknown }) => {
    const href = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const target =
      base !== undefined && href.startsWith(`${VERCEL_API_ORIGIN}/`)
        ? `${base}${href.slice(VERCEL_API_ORIGIN.length)}`
        : href;
    const { dispatcher: _dropped, ...rest } = init ?? {};
    const url = new URL(target);
    try {
      return await send(url, rest, { timeoutMs: deadlineOf(url, rest, options.requestTimeoutMs) });
    } catch (error) {
      if (SandboxError.isInstance(error) && error.code === "Timeout") throw new VercelDeadlineError(error);
      throw error;
    }
  }) as typeof globalThis.fetch;
  fetches.set(options, cached);
  return cached;
}

/** Credentials and the fetch, as every SDK entry point (`create`, `get`, `list`, `fork`) takes them. */
export function sdkParams(
  options: ResolvedVercelOptions,
  signal?: AbortSignal,
): {
  token: string;
  teamId: string;
  projectId: string;
  fetch: typeof globalThis.fetch;
  signal?: AbortSignal;
} {
  return { ...credentialsOf(options), fetch: sdkFetch(options), ...(signal ? { signal } : {}) };
}

/** Every credential of the provider. */
export function vercelSecrets(options: ResolvedVercelOptions): (string | undefined)[] {
  return [options.credentials?.token];
}
