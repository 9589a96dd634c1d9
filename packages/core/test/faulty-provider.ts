/**
 * Wraps a real provider so tests can make chosen driver calls fail (with real SandboxErrors) and can see
 * which driver methods were called — to prove retries, fallbacks and "no provider call" guarantees.
 */
import type { SandboxProvider } from "../src/spec/index.js";

export interface CallRecord {
  method: string;
}

export function recordingProvider<P extends SandboxProvider>(
  inner: P,
  faults: Partial<Record<string, (attempt: number) => unknown>> = {},
): P & { calls: CallRecord[] } {
  const calls: CallRecord[] = [];
  const attempts = new Map<string, number>();
  const proxy = new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof property !== "string" || !property.startsWith("do") || typeof value !== "function")
        return value;
      if (property === "doList") {
        // An async iterable, not a promise: recorded and faulted when the listing starts.
        return (...args: unknown[]) => {
          calls.push({ method: property });
          const attempt = (attempts.get(property) ?? 0) + 1;
          attempts.set(property, attempt);
          const fault = faults[property]?.(attempt);
          return (async function* () {
            if (fault !== undefined) throw fault;
            yield* (value as (...a: unknown[]) => AsyncIterable<unknown>).apply(target, args);
          })();
        };
      }
      return async (...args: unknown[]) => {
        calls.push({ method: property });
        const attempt = (attempts.get(property) ?? 0) + 1;
        attempts.set(property, attempt);
        const fault = faults[property]?.(attempt);
        if (fault !== undefined) throw fault;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return Object.assign(proxy, { calls });
}
