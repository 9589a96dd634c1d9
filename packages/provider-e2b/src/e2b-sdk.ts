import { readEnv, SandboxError } from "@sbox/core/spec";
import type { ConnectionOpts } from "e2b";
import type { ResolvedE2BOptions } from "./e2b-options.js";
import { type E2BOriginGuard, startOriginGuard } from "./e2b-origin-guard.js";

/** The `e2b` SDK module, as loaded on first use. */
export type E2BModule = typeof import("e2b");

/** The SDK's sandbox object: what `sandbox.raw()` returns. */
export type E2BSandbox = import("e2b").Sandbox;

let loading: Promise<E2BModule> | undefined;

/** What one provider instance keeps while it talks to E2B: its origin guard and the credentials it saw. */
interface E2BSession {
  guard?: E2BOriginGuard | undefined;
  starting?: Promise<E2BOriginGuard> | undefined;
  /** Per-sandbox access tokens (envd, traffic) handed out by E2B: secrets too. */
  readonly tokens: Map<string, readonly string[]>;
}

const sessions = new WeakMap<ResolvedE2BOptions, E2BSession>();

function sessionOf(options: ResolvedE2BOptions): E2BSession {
  let session = sessions.get(options);
  if (!session) {
    session = { tokens: new Map() };
    sessions.set(options, session);
  }
  return session;
}

function loadSdk(): Promise<E2BModule> {
  if (!loading) {
    const attempt = import("e2b");
    loading = attempt;
    attempt.catch(() => {
      if (loading === attempt) loading = undefined;
    });
  }
  return loading;
}

/** The origins the SDK talks to, as it computes them (options, else E2B's environment variables). */
function originsOf(options: ResolvedE2BOptions, requestTimeoutMs: number) {
  const domain = options.domain ?? readEnv("E2B_DOMAIN") ?? "e2b.app";
  const urls = [
    options.apiUrl ?? readEnv("E2B_API_URL") ?? `https://api.${domain}`,
    options.sandboxUrl ?? readEnv("E2B_SANDBOX_URL"),
  ].filter((url): url is string => url !== undefined);
  return { urls, domains: [domain], connectTimeoutMs: requestTimeoutMs };
}

/**
 * Loads the `e2b` SDK on first use (importing the provider costs nothing until a sandbox is used) and
 * starts the provider's origin guard (see `e2b-origin-guard.ts`), which every SDK call goes through. A
 * failed load or start is not cached: the next call tries again.
 */
export async function loadE2B(options: ResolvedE2BOptions): Promise<E2BModule> {
  const session = sessionOf(options);
  if (!session.guard) {
    session.starting ??= startOriginGuard(originsOf(options, options.requestTimeoutMs ?? 60_000)).then(
      (guard) => {
        session.guard = guard;
        return guard;
      },
      (error: unknown) => {
        session.starting = undefined;
        throw error;
      },
    );
  }
  const [sdk] = await Promise.all([loadSdk(), session.starting]);
  return sdk;
}

/**
 * `signal`, aborted with a `TimeoutError` after `ms` as well. The SDK bounds its unary calls with an
 * `AbortSignal.timeout()` that it only reaches through `AbortSignal.any()`, which Node 20 may collect
 * before it fires: the call then waits forever on a silent remote (seen in the deadline conformance case).
 * This deadline is held by its own (unref'd) timer until it fires, so it cannot get lost.
 */
export function deadlineSignal(ms: number, signal?: AbortSignal): AbortSignal {
  const deadline = new AbortController();
  setTimeout(
    () => deadline.abort(new DOMException(`no answer within ${ms} ms`, "TimeoutError")),
    ms,
  ).unref?.();
  return signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal;
}

/** How long past the request deadline {@link boundedCall} waits for the SDK to end a call itself. */
const DEADLINE_GRACE_MS = 1_000;

/**
 * `work` (one SDK call that should answer within the request deadline), or a `Timeout` once the deadline
 * and a short grace passed without it settling. The SDK ends such a call itself through the signal it was
 * given, but it combines that signal with its own timeout through `AbortSignal.any()`, whose result Node
 * 20 may collect while the request is pending: the call then never ends on a silent remote (the kit's
 * deadline case saw `create()` and a command's start hang). This timer is the provider's own.
 */
export function boundedCall<T>(
  options: ResolvedE2BOptions,
  operation: string,
  work: Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  return boundedBy((options.requestTimeoutMs ?? 60_000) + DEADLINE_GRACE_MS, operation, work, signal);
}

/**
 * `work`, or a `Timeout` after `ms` without it settling (see {@link boundedCall}); for a call with a
 * budget of its own, such as the state probe after a failed call. An abort of `signal` rejects with its
 * reason at once.
 */
export function boundedBy<T>(
  ms: number,
  operation: string,
  work: Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      work.catch(() => undefined);
      reject(new SandboxError("Timeout", `e2b ${operation}: no answer within ${ms} ms`, { retryable: true }));
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      work.catch(() => undefined);
      reject(signal?.reason);
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/** The signal of one unary SDK call: the caller's, with the request deadline on it. */
export function unarySignal(options: ResolvedE2BOptions, signal?: AbortSignal): AbortSignal {
  return deadlineSignal(options.requestTimeoutMs ?? 60_000, signal);
}

/**
 * Connection options for one control-plane call: credentials, URLs and the origin guard, plus the call's
 * signal with the request deadline on it.
 */
export function connectionOptions(options: ResolvedE2BOptions, signal?: AbortSignal): ConnectionOpts {
  const guard = sessions.get(options)?.guard;
  if (!guard) {
    // Without the guard the SDK would follow a redirect to any origin with the API key: never send.
    throw new SandboxError(
      "InvalidState",
      "e2b: the SDK was called before the provider's origin guard started",
    );
  }
  const out: ConnectionOpts = { proxy: guard.proxyUrl };
  if (options.apiKey !== undefined) out.apiKey = options.apiKey;
  if (options.domain !== undefined) out.domain = options.domain;
  if (options.apiUrl !== undefined) out.apiUrl = options.apiUrl;
  if (options.sandboxUrl !== undefined) out.sandboxUrl = options.sandboxUrl;
  if (options.requestTimeoutMs !== undefined) out.requestTimeoutMs = options.requestTimeoutMs;
  if (options.headers !== undefined) out.apiHeaders = { ...options.headers };
  out.signal = unarySignal(options, signal);
  // The SDK's debug mode skips the control plane; this provider always talks to a real one.
  out.debug = false;
  return out;
}

/** Remembers what E2B handed out for `sandbox`: its domain (for the guard) and its tokens (as secrets). */
export function rememberSandbox(options: ResolvedE2BOptions, sandbox: E2BSandbox): void {
  const session = sessionOf(options);
  if (sandbox.sandboxDomain) session.guard?.allowDomain(sandbox.sandboxDomain);
  const envdToken: unknown = Reflect.get(sandbox, "envdAccessToken");
  const tokens = [envdToken, sandbox.trafficAccessToken].filter((t): t is string => typeof t === "string");
  if (tokens.length > 0) session.tokens.set(sandbox.sandboxId, tokens);
}

/** Forgets a destroyed sandbox's tokens. */
export function forgetSandbox(options: ResolvedE2BOptions, id: string): void {
  sessions.get(options)?.tokens.delete(id);
}

/** Every credential of the provider: the API key, the guard's proxy password, the sandboxes' tokens. */
export function e2bSecrets(options: ResolvedE2BOptions): (string | undefined)[] {
  const session = sessions.get(options);
  const proxy = session?.guard ? new URL(session.guard.proxyUrl).password : undefined;
  return [options.apiKey, proxy, ...[...(session?.tokens.values() ?? [])].flat()];
}

/** Closes the provider's origin guard (`client.dispose()`). */
export async function closeE2B(options: ResolvedE2BOptions): Promise<void> {
  const session = sessions.get(options);
  const guard = session?.guard ?? (await session?.starting?.catch(() => undefined));
  if (session) {
    session.guard = undefined;
    session.starting = undefined;
  }
  await guard?.close();
}
