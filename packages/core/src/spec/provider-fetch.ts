import { abortErrorOf } from "../errors/abort-error.js";
import { SandboxError } from "../errors/sandbox-error.js";

/** How a provider's HTTP client talks to its remote. */
export interface ProviderFetchOptions {
  /** The provider's name, for error messages. */
  readonly provider: string;
  /** The fetch that sends (default: the global one). */
  readonly fetch?: typeof fetch | undefined;
  /**
   * The default deadline of one request in ms: until the response's status and headers arrive, and then
   * between two chunks of its body. A remote that stays silent longer rejects the request with `Timeout`.
   */
  readonly requestTimeoutMs: number;
  /**
   * Headers that carry credentials besides `Authorization`, `Proxy-Authorization` and `Cookie` (always
   * treated so), e.g. `["X-API-Key"]`. None of them is sent to another origin.
   */
  readonly credentialHeaders?: readonly string[] | undefined;
  /** The provider's secrets: a header whose value contains one is not sent to another origin either. */
  readonly secrets?: (() => readonly (string | undefined)[]) | undefined;
  /** Most redirects followed for one request (default 5). */
  readonly maxRedirects?: number | undefined;
}

/** Per-request options of a {@link ProviderFetch}. */
export interface ProviderRequestOptions {
  /**
   * The deadline of this request instead of the default: for a call that legitimately waits longer (a
   * wait route's own timeout, an exec that runs a command), plus the default as grace.
   */
  readonly timeoutMs?: number | undefined;
  /**
   * Whether a `Timeout` of this request may be retried: default true for GET, HEAD, PUT, DELETE and
   * OPTIONS, false otherwise (the remote may have done it).
   */
  readonly retryable?: boolean | undefined;
  /** What the request does, for error messages (default: its method and path). */
  readonly what?: string | undefined;
}

/** `fetch` with a deadline and credential-safe redirects; errors other than these are the fetch's own. */
export type ProviderFetch = (
  input: string | URL,
  init?: RequestInit,
  options?: ProviderRequestOptions,
) => Promise<Response>;

const IDEMPOTENT = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]);
const ALWAYS_CREDENTIALS = ["authorization", "proxy-authorization", "cookie"];
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** A body that can be sent again on a redirect: not a stream, which is used up by the first attempt. */
function isReplayable(body: RequestInit["body"]): boolean {
  return body === undefined || body === null || !(body instanceof ReadableStream);
}

/**
 * The HTTP client a provider that uses `fetch` builds its calls on (the spec's answer to "never send a
 * credential to another origin" and "no wait without a bound"):
 *
 * - Redirects are followed by hand. To the same origin, as sent. To another origin, without any credential
 *   header (`Authorization`, `Proxy-Authorization`, `Cookie`, the ones named in `credentialHeaders`, and
 *   any header whose value contains one of the provider's secrets); a redirect that would send a request
 *   body to another origin (307/308) is refused with a `Provider` error and no request is made there.
 * - Every request has a deadline: the response's headers within `timeoutMs`, then no more than `timeoutMs`
 *   between two chunks of the body. Past it the request is aborted and rejects with `Timeout`, retryable as
 *   its method allows.
 * - An abort of the caller's signal rejects with the signal's reason (`abortErrorOf`).
 */
export function createProviderFetch(options: ProviderFetchOptions): ProviderFetch {
  const send = options.fetch ?? globalThis.fetch;
  const maxRedirects = options.maxRedirects ?? 5;
  const credentialNames = new Set([
    ...ALWAYS_CREDENTIALS,
    ...(options.credentialHeaders ?? []).map((name) => name.toLowerCase()),
  ]);
  const withoutCredentials = (headers: Headers): Headers => {
    const secrets = (options.secrets?.() ?? []).filter(
      (s): s is string => typeof s === "string" && s.length >= 4,
    );
    const kept = new Headers();
    headers.forEach((value, name) => {
      if (credentialNames.has(name.toLowerCase())) return;
      if (secrets.some((secret) => value.includes(secret))) return;
      kept.append(name, value);
    });
    return kept;
  };

  return async (input, init = {}, request = {}) => {
    const timeoutMs = request.timeoutMs ?? options.requestTimeoutMs;
    let method = (init.method ?? "GET").toUpperCase();
    const retryable = request.retryable ?? IDEMPOTENT.has(method);
    let url = new URL(input);
    const what = request.what ?? `${method} ${url.origin}${url.pathname}`;
    const origin = url.origin;
    const caller = init.signal ?? undefined;
    const deadline = new AbortController();
    const timeout = (): SandboxError =>
      new SandboxError("Timeout", `${what}: the remote did not answer within ${timeoutMs} ms`, {
        provider: options.provider,
        retryable,
      });
    let timer: ReturnType<typeof setTimeout> | undefined = setTimeout(
      () => deadline.abort(timeout()),
      timeoutMs,
    );
    const signal = caller ? AbortSignal.any([caller, deadline.signal]) : deadline.signal;
    const failed = (error: unknown): unknown => {
      if (timer !== undefined) clearTimeout(timer);
      if (deadline.signal.aborted) return deadline.signal.reason;
      if (caller?.aborted) return abortErrorOf(caller, what);
      return error;
    };
    let headers = new Headers(init.headers);
    let body = init.body;
    for (let hop = 0; ; hop++) {
      let response: Response;
      try {
        response = await send(url, {
          ...init,
          method,
          headers,
          body: body ?? null,
          signal,
          redirect: "manual",
        });
      } catch (error) {
        throw failed(error);
      }
      const location = response.headers.get("location");
      if (!REDIRECTS.has(response.status) || location === null) {
        clearTimeout(timer);
        timer = undefined;
        return withIdleDeadline(response, timeoutMs, timeout, caller, what);
      }
      await response.body?.cancel().catch(() => undefined);
      const next = new URL(location, url);
      const refuse = (why: string): never => {
        clearTimeout(timer);
        throw new SandboxError("Provider", `${what}: ${why}`, {
          provider: options.provider,
          retryable: false,
        });
      };
      if (hop >= maxRedirects) refuse(`more than ${maxRedirects} redirects`);
      if (next.protocol !== "https:" && next.protocol !== "http:")
        refuse(`redirected to a ${next.protocol} URL`);
      const keepsMethod = response.status === 307 || response.status === 308;
      if (!keepsMethod && (response.status === 303 || method === "POST")) {
        method = method === "HEAD" ? "HEAD" : "GET";
        body = undefined;
        headers.delete("content-type");
        headers.delete("content-length");
      }
      if (next.origin !== origin) {
        if (keepsMethod && body !== undefined && body !== null) {
          refuse(
            `the remote redirected to another origin (${next.origin}); the request body is not sent there`,
          );
        }
        headers = withoutCredentials(headers);
      } else if (!isReplayable(body)) {
        refuse("the remote redirected a streamed request body, which cannot be sent twice");
      }
      url = next;
    }
  };
}

/** The response with its body read under the deadline: no more than `timeoutMs` between two chunks. */
function withIdleDeadline(
  response: Response,
  timeoutMs: number,
  timeout: () => SandboxError,
  caller: AbortSignal | undefined,
  what: string,
): Response {
  if (response.body === null) return response;
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const idle = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(timeout()), timeoutMs);
      });
      try {
        const { value, done } = await Promise.race([reader.read(), idle]);
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        reader.cancel().catch(() => undefined);
        controller.error(caller?.aborted ? abortErrorOf(caller, what) : error);
      } finally {
        clearTimeout(timer);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
