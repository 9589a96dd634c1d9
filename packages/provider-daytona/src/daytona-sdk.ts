import { SandboxError } from "@sbox/core/spec";
import { DAYTONA_PROVIDER_NAME } from "./daytona-names.js";
import type { ResolvedDaytonaOptions } from "./daytona-options.js";

/** The `@daytonaio/sdk` module, as loaded on first use. */
export type DaytonaModule = typeof import("@daytonaio/sdk");

/** The SDK's client. */
export type DaytonaClient = import("@daytonaio/sdk").Daytona;

/** The SDK's sandbox object: what `sandbox.raw()` returns. */
export type DaytonaSdkSandbox = import("@daytonaio/sdk").Sandbox;

let loading: Promise<DaytonaModule> | undefined;

function loadSdk(): Promise<DaytonaModule> {
  if (!loading) {
    const attempt = import("@daytonaio/sdk");
    loading = attempt;
    attempt.catch(() => {
      if (loading === attempt) loading = undefined;
    });
  }
  return loading;
}

const clients = new WeakMap<ResolvedDaytonaOptions, Promise<DaytonaClient>>();

/**
 * The SDK client of one provider instance, made on first use (importing the provider costs nothing until a
 * sandbox is used). It polls for state changes instead of holding the SDK's event socket open, so a client
 * leaves nothing running between calls; its requests are bounded by `requestTimeoutMs`.
 */
export function daytonaClient(options: ResolvedDaytonaOptions): Promise<DaytonaClient> {
  let client = clients.get(options);
  if (!client) {
    client = (async () => {
      if (!options.apiKey) {
        throw new SandboxError("Unauthorized", "daytona: no API key: pass apiKey or set DAYTONA_API_KEY", {
          provider: DAYTONA_PROVIDER_NAME,
        });
      }
      const { Daytona } = await loadSdk();
      const config: ConstructorParameters<typeof Daytona>[0] = {
        apiKey: options.apiKey,
        requestTimeoutMs: options.requestTimeoutMs,
        useDeprecatedPolling: true,
      };
      if (options.apiUrl !== undefined) config.apiUrl = options.apiUrl;
      if (options.target !== undefined) config.target = options.target;
      return new Daytona(config);
    })();
    clients.set(options, client);
    client.catch(() => clients.delete(options));
  }
  return client;
}

/** Forgets and disposes the provider's client (`client.dispose()`). */
export async function closeDaytona(options: ResolvedDaytonaOptions): Promise<void> {
  const client = clients.get(options);
  clients.delete(options);
  const daytona = await client?.catch(() => undefined);
  await daytona?.[Symbol.asyncDispose]();
}

/**
 * Waits for `work` at most until `signal` aborts or `requestTimeoutMs` passes: the SDK takes no abort
 * signal, so an aborted call stops waiting (the request itself ends at the SDK's own timeout).
 */
export function bounded<T>(work: Promise<T>, signal: AbortSignal, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      cleanup();
      reject(signal.reason ?? new DOMException("aborted", "AbortError"));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(
        new SandboxError("Timeout", `daytona: ${what} got no answer within ${ms} ms`, {
          provider: DAYTONA_PROVIDER_NAME,
        }),
      );
    }, ms);
    const cleanup = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        cleanup();
        resolve(value);
      },
      (error: unknown) => {
        cleanup();
        reject(error);
      },
    );
  });
}
