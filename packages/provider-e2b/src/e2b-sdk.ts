import type { ConnectionOpts } from "e2b";
import type { ResolvedE2BOptions } from "./e2b-options.js";

/** The `e2b` SDK module, as loaded on first use. */
export type E2BModule = typeof import("e2b");

/** The SDK's sandbox object: what `sandbox.raw()` returns. */
export type E2BSandbox = import("e2b").Sandbox;

let loading: Promise<E2BModule> | undefined;

/**
 * Loads the `e2b` SDK on first use, so importing the provider costs nothing until a sandbox is used. A failed
 * load is not cached: the next call tries again.
 */
export function loadE2B(): Promise<E2BModule> {
  if (!loading) {
    const attempt = import("e2b");
    loading = attempt;
    attempt.catch(() => {
      if (loading === attempt) loading = undefined;
    });
  }
  return loading;
}

/** Connection options for one SDK call: credentials and URLs from the provider, plus the call's signal. */
export function connectionOptions(options: ResolvedE2BOptions, signal?: AbortSignal): ConnectionOpts {
  const out: ConnectionOpts = {};
  if (options.apiKey !== undefined) out.apiKey = options.apiKey;
  if (options.domain !== undefined) out.domain = options.domain;
  if (options.apiUrl !== undefined) out.apiUrl = options.apiUrl;
  if (options.sandboxUrl !== undefined) out.sandboxUrl = options.sandboxUrl;
  if (options.requestTimeoutMs !== undefined) out.requestTimeoutMs = options.requestTimeoutMs;
  if (options.headers !== undefined) out.apiHeaders = { ...options.headers };
  if (signal !== undefined) out.signal = signal;
  // The SDK's debug mode skips the control plane; this provider always talks to a real one.
  out.debug = false;
  return out;
}
