import type { LossyEmulation } from "../capabilities/capability-emulation.js";
import { isLossyEmulation } from "../capabilities/capability-emulation.js";
import type { CapabilityMap, CapabilityName } from "../capabilities/capability-names.js";
import { checkProviderManifest } from "../capabilities/manifest.js";
import { redactError } from "../errors/redact-error.js";
import { NotSupportedError, SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import type { MethodsOf, UnknownMethods } from "../sandbox/method-gates.js";
import { createProviderRuntime, type ProviderRuntime } from "../sandbox/provider-runtime.js";
import { callOptions, invalidInput } from "../sandbox/sandbox-context.js";
import { createSandboxFacade, toSandboxInfo } from "../sandbox/sandbox-facade.js";
import type { Sandbox, SandboxInfo } from "../sandbox/sandbox-types.js";
import type { DriverSandbox, SandboxProvider } from "../spec/provider-spec.js";
import type { ListFilter, SandboxSpec } from "../spec/sandbox-spec.js";
import type {
  CallOptions,
  EffectiveCapabilities,
  SandboxClient,
  SandboxClientOptions,
  SandboxHooks,
} from "./client-types.js";
import { idempotentCreate } from "./idempotent-create.js";
import { abortError, withRetry } from "./retry.js";
import type { HonoursOf } from "./spec-for.js";
import { EXPIRES_AT_METADATA_KEY, matchesFilter, validateListFilter, validateSpec } from "./validate-spec.js";

/** Per-key union of the primary's and the fallbacks' levels: what a sandbox from any of them may have. */
export type MergedCapabilities<TCaps extends CapabilityMap, TFallback extends CapabilityMap> = {
  readonly [K in CapabilityName]: TCaps[K] | TFallback[K];
};

/**
 * The client type of a provider (plus fallbacks and opt-in emulations): its effective capability map,
 * what its type says of its optional methods, and the spec fields it honours — with fallbacks, only what
 * every one of them is sure to have.
 */
export type ClientFor<
  TProvider extends SandboxProvider,
  TEmulate extends LossyEmulation,
  TFallback extends SandboxProvider,
> = SandboxClient<
  EffectiveCapabilities<
    MergedCapabilities<
      TProvider["capabilities"],
      [TFallback] extends [never] ? TProvider["capabilities"] : TFallback["capabilities"]
    >,
    TEmulate
  >,
  [TFallback] extends [never] ? MethodsOf<TProvider> : UnknownMethods,
  [TFallback] extends [never] ? HonoursOf<TProvider> : HonoursOf<TProvider> & HonoursOf<TFallback>
>;

function checkProvider(provider: SandboxProvider): void {
  if (typeof provider !== "object" || provider === null)
    throw invalidInput("provider must be a provider object (e.g. local())");
  const problems = checkProviderManifest(provider);
  if (problems.length > 0) {
    throw invalidInput(
      `provider ${String(provider.name)} is malformed: ${problems.map((p) => p.message).join("; ")}`,
      provider.name,
    );
  }
}

/**
 * Creates a client for one provider (plus optional fallbacks).
 *
 * ```ts
 * const client = createSandboxClient({ provider: local() });
 * const sandbox = await client.create();
 * const { stdout } = await sandbox.commands.run("echo hi");
 * ```
 */
export function createSandboxClient<
  const TProvider extends SandboxProvider,
  const TEmulate extends LossyEmulation = never,
  const TFallback extends SandboxProvider = never,
>(
  options: SandboxClientOptions<TProvider, TEmulate> & { fallback?: readonly TFallback[] | undefined },
): ClientFor<TProvider, TEmulate, TFallback> {
  checkProvider(options.provider);
  for (const provider of options.fallback ?? []) checkProvider(provider);
  for (const name of options.emulate ?? []) {
    if (!isLossyEmulation(name))
      throw invalidInput(
        `emulate: ${JSON.stringify(name)} is not an opt-in emulation (snapshot, fork, codeInterpreter)`,
      );
  }
  const runtimeOptions = { emulate: options.emulate, primitivesOnly: options.primitivesOnly };
  const primary = createProviderRuntime(options.provider, runtimeOptions);
  const fallbacks = (options.fallback ?? []).map((p) => createProviderRuntime(p, runtimeOptions));
  const runtimes = [primary, ...fallbacks];
  // Errors of the client may carry causes from any of its providers (AllProvidersFailed): scrub them all.
  const secrets = () => runtimes.flatMap((runtime) => runtime.secrets());
  const hooks: SandboxHooks[] = [...(options.plugins ?? []).map((p) => p.hooks ?? {}), options.hooks ?? {}];
  let disposed = false;

  const reportError = (runtime: ProviderRuntime) => (error: SandboxError, operation: string) => {
    for (const hook of hooks) {
      try {
        hook.onError?.(error, { operation, provider: runtime.name });
      } catch {
        // A faulty error hook must not mask the error being reported.
      }
    }
  };

  const wrap = (runtime: ProviderRuntime, handle: DriverSandbox): Sandbox =>
    createSandboxFacade({
      runtime,
      handle,
      reportError: reportError(runtime),
      onDestroy: async (id) => {
        runtime.forget(handle.id);
        for (const hook of hooks) await hook.onDestroy?.({ id, provider: runtime.name });
      },
    });

  /** Runs a client operation: rejects once disposed, wraps every error, reports it to the hooks. */
  const operation = async <T>(runtime: ProviderRuntime, name: string, run: () => Promise<T>): Promise<T> => {
    try {
      if (disposed) throw new SandboxError("InvalidState", "the client was disposed", { retryable: false });
      return await run();
    } catch (error) {
      const wrapped = redactError(
        toSandboxError(error, { provider: runtime.name, operation: name }),
        secrets(),
      );
      reportError(runtime)(wrapped, name);
      throw wrapped;
    }
  };

  const createWith = async (runtime: ProviderRuntime, input: SandboxSpec): Promise<Sandbox> => {
    let spec: SandboxSpec = {
      ...input,
      metadata: { ...(options.defaultMetadata ?? {}), ...(input.metadata ?? {}) },
    };
    for (const hook of hooks) {
      const changed = await hook.beforeCreate?.(spec, { provider: runtime.name });
      if (changed) spec = changed;
    }
    validateSpec(spec, runtime.provider, runtime.capabilities.map);
    if (spec.ttlMs !== undefined && !runtime.provider.honours.includes("ttlMs")) {
      // Recorded in metadata so that client.reap() of any process can enforce it.
      spec = {
        ...spec,
        metadata: {
          ...spec.metadata,
          [EXPIRES_AT_METADATA_KEY]: new Date(Date.now() + spec.ttlMs).toISOString(),
        },
      };
    }
    const signal = spec.signal ?? new AbortController().signal;
    const attempt = idempotentCreate(runtime, spec, signal);
    const handle = spec.idempotencyKey ? await withRetry(attempt, options.retry, signal) : await attempt();
    runtime.createdSpecs.set(handle.id, spec);
    const sandbox = wrap(runtime, handle);
    for (const hook of hooks) await hook.afterCreate?.(sandbox);
    return sandbox;
  };

  const client = {
    provider: primary.name,
    capabilities: primary.capabilities,
    create: (spec: SandboxSpec = {}) =>
      operation(primary, "create", async () => {
        if (typeof spec !== "object" || spec === null)
          throw invalidInput("spec must be an object", primary.name);
        if (!spec.idempotencyKey) return createWith(primary, spec);
        // With an idempotency key, creation may be retried and may fall over to the next provider.
        const failures: SandboxError[] = [];
        for (const runtime of runtimes) {
          try {
            return await createWith(runtime, spec);
          } catch (error) {
            const wrapped = toSandboxError(error, { provider: runtime.name, operation: "create" });
            if (wrapped.code === "Aborted" || wrapped.code === "Validation" || runtimes.length === 1)
              throw wrapped;
            failures.push(wrapped);
          }
        }
        throw new SandboxError(
          "AllProvidersFailed",
          `every provider failed to create the sandbox: ${failures.map((f) => `${f.provider}: [${f.code}] ${f.message}`).join("; ")}`,
          { cause: new AggregateError(failures), retryable: false },
        );
      }),
    connect: (id: string, connectOptions: CallOptions = {}) =>
      operation(primary, "connect", async () => {
        if (typeof id !== "string" || id.trim() === "")
          throw invalidInput("id must be a non-empty string", primary.name);
        const separator = id.indexOf(":");
        const prefix = separator > 0 ? id.slice(0, separator) : undefined;
        const runtime = runtimes.find((r) => r.name === prefix);
        const target = runtime ?? primary;
        const nativeId = runtime ? id.slice(separator + 1) : id;
        if (nativeId === "")
          throw invalidInput("id has no native part after the provider prefix", target.name);
        const signal = connectOptions.signal;
        const handle = await withRetry(
          () => target.driver.doConnect(nativeId, callOptions(signal)),
          options.retry,
          signal,
        );
        return wrap(target, handle);
      }),
    list: (filter: ListFilter & CallOptions = {}): AsyncIterable<SandboxInfo> => ({
      [Symbol.asyncIterator]: () => listSandboxes(filter)[Symbol.asyncIterator](),
    }),
    reap: (reapOptions: CallOptions = {}) =>
      operation(primary, "reap", async () => {
        if (primary.capabilities.flags.nativeExpiry) return [];
        const reaped: SandboxInfo[] = [];
        const now = Date.now();
        for await (const info of listSandboxes({
          state: ["running", "paused", "starting"],
          signal: reapOptions.signal,
        })) {
          if (!info.expiresAt || info.expiresAt.getTime() > now) continue;
          const call = callOptions(reapOptions.signal);
          const handle = await primary.driver.doConnect(info.id.slice(primary.name.length + 1), call);
          if (primary.driver.doStop) await primary.driver.doStop(handle, call);
          else await primary.driver.doDestroy(handle, call);
          reaped.push(
            toSandboxInfo(
              primary.name,
              await primary.driver.doGetInfo(handle, call).catch(() => ({
                id: handle.id,
                state: "destroyed" as const,
                metadata: info.metadata,
              })),
            ),
          );
        }
        return reaped;
      }),
    dispose: async () => {
      if (disposed) return;
      disposed = true;
      const errors: unknown[] = [];
      for (const runtime of runtimes) {
        try {
          await runtime.driver.doDispose?.();
        } catch (error) {
          errors.push(
            redactError(toSandboxError(error, { provider: runtime.name, operation: "dispose" }), secrets()),
          );
        }
      }
      if (errors.length > 0) throw errors[0];
    },
    // `await using client = ...` disposes it at the end of the block.
    [Symbol.asyncDispose]: () => client.dispose(),
  };

  async function* listSandboxes(filter: ListFilter & CallOptions): AsyncGenerator<SandboxInfo> {
    try {
      if (disposed) throw new SandboxError("InvalidState", "the client was disposed", { retryable: false });
      if (typeof filter !== "object" || filter === null)
        throw invalidInput("filter must be an object", primary.name);
      validateListFilter(filter, primary.name);
      if (primary.capabilities.map.list === "unsupported" || !primary.driver.doList) {
        throw new NotSupportedError("list", primary.name);
      }
      const { signal, ...rest } = filter;
      let count = 0;
      if (rest.limit === 0) return;
      for await (const info of primary.driver.doList(rest, callOptions(signal))) {
        if (signal?.aborted) throw abortError(signal);
        // The provider may filter coarsely or not at all; the core makes sure no filter field is ignored.
        if (!matchesFilter(info, rest)) continue;
        yield toSandboxInfo(primary.name, info);
        count++;
        if (rest.limit !== undefined && count >= rest.limit) return;
      }
    } catch (error) {
      const wrapped = redactError(
        toSandboxError(error, { provider: primary.name, operation: "list" }),
        secrets(),
      );
      reportError(primary)(wrapped, "list");
      throw wrapped;
    }
  }

  return client as unknown as ClientFor<TProvider, TEmulate, TFallback>;
}
