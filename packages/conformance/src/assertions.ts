import { SandboxError, type SandboxErrorCode } from "@sbox/core/spec";

/** A broken expectation. The runner prefixes the case id: `exec.stderr.separate: expected stderr ...`. */
export class ConformanceFailure extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ConformanceFailure";
  }
}

/** Thrown by `ctx.skip(reason)`: the case ends as skipped, with the reason in the report. */
export class ConformanceSkip extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "ConformanceSkip";
  }
}

const MAX_SHOWN = 160;

/** A short, unambiguous rendering of a value for failure messages (control characters escaped). */
export function show(value: unknown): string {
  let text: string;
  if (value instanceof Uint8Array) {
    const head = Array.from(value.subarray(0, 24), (b) => b.toString(16).padStart(2, "0")).join(" ");
    text = `<${value.length} bytes: ${head}${value.length > 24 ? " ..." : ""}>`;
  } else if (typeof value === "string") {
    text = JSON.stringify(value.length > MAX_SHOWN ? `${value.slice(0, MAX_SHOWN)}` : value);
    if (value.length > MAX_SHOWN) text += `... (${value.length} chars)`;
  } else if (value instanceof Error) {
    text = SandboxError.isInstance(value)
      ? `SandboxError(${value.code}: ${value.message})`
      : `${value.name}: ${value.message}`;
  } else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
    if (text.length > MAX_SHOWN) text = `${text.slice(0, MAX_SHOWN)}...`;
  }
  return text;
}

/** Fails with `message` unless `condition` holds. */
export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new ConformanceFailure(message);
}

/** Fails unless `actual` is strictly equal to `expected`: `expected <what> <expected>, got <actual>`. */
export function expectEqual<T>(actual: T, expected: T, what: string): void {
  if (!Object.is(actual, expected)) {
    throw new ConformanceFailure(`expected ${what} ${show(expected)}, got ${show(actual)}`);
  }
}

/** Fails unless both byte arrays are identical, naming the first differing offset. */
export function expectBytes(actual: Uint8Array, expected: Uint8Array, what: string): void {
  if (!(actual instanceof Uint8Array)) {
    throw new ConformanceFailure(`expected ${what} to be a Uint8Array, got ${show(actual)}`);
  }
  const length = Math.min(actual.length, expected.length);
  for (let i = 0; i < length; i++) {
    if (actual[i] !== expected[i]) {
      throw new ConformanceFailure(
        `expected ${what} to equal the ${expected.length} bytes written; first difference at offset ${i}: expected 0x${expected[
          i
        ]!.toString(16).padStart(
          2,
          "0",
        )}, got 0x${actual[i]!.toString(16).padStart(2, "0")} (got ${actual.length} bytes)`,
      );
    }
  }
  if (actual.length !== expected.length) {
    throw new ConformanceFailure(
      `expected ${what} to be ${expected.length} bytes, got ${actual.length} bytes`,
    );
  }
}

/** Fails unless `value` is a `SandboxError` with one of `codes`; returns it. */
export function expectSandboxError(
  value: unknown,
  codes: SandboxErrorCode | readonly SandboxErrorCode[],
  what: string,
): SandboxError {
  const wanted: readonly SandboxErrorCode[] = typeof codes === "string" ? [codes] : codes;
  if (!SandboxError.isInstance(value)) {
    throw new ConformanceFailure(
      `expected ${what} to reject with a SandboxError (${wanted.join(" or ")}), got ${show(value)}`,
      {
        cause: value,
      },
    );
  }
  if (!wanted.includes(value.code)) {
    throw new ConformanceFailure(
      `expected ${what} to reject with code ${wanted.join(" or ")}, got ${show(value)}`,
      {
        cause: value,
      },
    );
  }
  return value;
}

/** Awaits `promise` (or calls `fn`), fails if it resolves, and checks the rejection like {@link expectSandboxError}. */
export async function expectRejects(
  action: PromiseLike<unknown> | (() => unknown),
  codes: SandboxErrorCode | readonly SandboxErrorCode[],
  what: string,
): Promise<SandboxError> {
  let outcome: unknown;
  try {
    outcome = await (typeof action === "function" ? action() : action);
  } catch (error) {
    return expectSandboxError(error, codes, what);
  }
  const wanted = typeof codes === "string" ? codes : codes.join(" or ");
  throw new ConformanceFailure(
    `expected ${what} to reject with code ${wanted}, but it resolved with ${show(outcome)}`,
  );
}

/** Fails unless `action` resolves; a rejection is reported with its code. */
export async function expectResolves<T>(action: PromiseLike<T>, what: string): Promise<T> {
  try {
    return await action;
  } catch (error) {
    throw new ConformanceFailure(`expected ${what} to succeed, but it rejected with ${show(error)}`, {
      cause: error,
    });
  }
}

/** Polls `probe` until it returns a truthy value or `timeoutMs` passes; returns the last value. */
export async function eventually<T>(
  probe: () => Promise<T> | T,
  timeoutMs: number,
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await probe();
  while (!value && Date.now() < deadline) {
    await sleep(intervalMs);
    value = await probe();
  }
  return value;
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Lowercase hex of bytes, two digits each, no separators. */
export function hexOf(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}
