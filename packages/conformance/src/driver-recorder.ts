import type { SandboxProvider } from "@sbox/core/spec";

/** One call of a driver method, as seen by the recording proxy. */
export interface DriverCall {
  /** The driver method, e.g. `"doExec"`. */
  readonly method: string;
  /** Native id of the sandbox the call was about, when its first argument was a sandbox. */
  readonly sandboxId: string | undefined;
  /** Position in the log. */
  readonly seq: number;
}

/** The log of driver calls made through recorded providers. */
export interface DriverCallLog {
  /** A position to compare later calls against. */
  mark(): number;
  /** Calls made after `mark`, optionally only those about one native sandbox id or with no sandbox. */
  since(mark: number, filter?: { sandboxId?: string | undefined }): DriverCall[];
}

/** A driver-call log plus the function that wraps providers into it. */
export interface DriverRecorder extends DriverCallLog {
  /** Wraps `provider` so every `do*` method call is logged before it runs. */
  record<T extends SandboxProvider>(provider: T): T;
}

function sandboxIdOf(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const id = (value as { id?: unknown }).id;
  return typeof id === "string" && "native" in value ? id : undefined;
}

/**
 * Creates a recorder. The wrapper is a Proxy, so methods a provider keeps on a prototype, and the absence
 * of a method, look exactly as they do on the provider itself: the core's feature detection is unchanged.
 */
export function createDriverRecorder(): DriverRecorder {
  const calls: DriverCall[] = [];
  return {
    mark: () => calls.length,
    since(mark, filter) {
      const after = calls.slice(mark);
      if (!filter || filter.sandboxId === undefined) return after;
      return after.filter((call) => call.sandboxId === undefined || call.sandboxId === filter.sandboxId);
    },
    record<T extends SandboxProvider>(provider: T): T {
      const wrapped = new Map<PropertyKey, unknown>();
      return new Proxy(provider, {
        get(target, property, receiver) {
          const value = Reflect.get(target, property, receiver);
          if (typeof property !== "string" || !property.startsWith("do") || typeof value !== "function")
            return value;
          const known = wrapped.get(property);
          if (known) return known;
          const method = value as (...args: unknown[]) => unknown;
          // Always call on the provider itself: class-based providers keep private state on `this`.
          const recorded = (...args: unknown[]): unknown => {
            calls.push({ method: property, sandboxId: sandboxIdOf(args[0]), seq: calls.length });
            return method.apply(target, args);
          };
          wrapped.set(property, recorded);
          return recorded;
        },
      });
    },
  };
}
