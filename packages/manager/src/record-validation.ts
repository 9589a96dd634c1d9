import { SandboxError } from "@sbox/core";

function invalid(message: string): SandboxError {
  return new SandboxError("Validation", message, { retryable: false });
}

const LABEL_KEY = /^[A-Za-z0-9]([A-Za-z0-9._/-]{0,126}[A-Za-z0-9])?$/;
const MAX_LABEL_VALUE = 1024;
const MAX_OWNER = 256;

/** Record ids are `sbx_` and 32 hex digits; anything else is a `Validation` error (or `NotFound` for lookups). */
export const RECORD_ID_PATTERN: RegExp = /^sbx_[0-9a-f]{32}$/;

/** Checks labels: keys like Kubernetes label keys, values strings up to 1 KiB without NUL. */
export function validateLabels(labels: unknown): Record<string, string> {
  if (labels === undefined) return {};
  if (typeof labels !== "object" || labels === null || Array.isArray(labels))
    throw invalid("labels must be an object of strings");
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(labels)) {
    if (!LABEL_KEY.test(key)) {
      throw invalid(
        `label key ${JSON.stringify(key)} is invalid: use 1-128 letters, digits, '.', '_', '/', '-', starting and ending with a letter or digit`,
      );
    }
    if (typeof value !== "string") throw invalid(`label ${key} must be a string`);
    if (value.length > MAX_LABEL_VALUE)
      throw invalid(`label ${key} is longer than ${MAX_LABEL_VALUE} characters`);
    if (value.includes("\0")) throw invalid(`label ${key} must not contain NUL`);
    out[key] = value;
  }
  return out;
}

/** Checks an owner id: a non-empty string up to 256 characters without NUL. */
export function validateOwner(ownerId: unknown): string | null {
  if (ownerId === undefined || ownerId === null) return null;
  if (typeof ownerId !== "string" || ownerId.length === 0)
    throw invalid("ownerId must be a non-empty string");
  if (ownerId.length > MAX_OWNER) throw invalid(`ownerId is longer than ${MAX_OWNER} characters`);
  if (ownerId.includes("\0")) throw invalid("ownerId must not contain NUL");
  return ownerId;
}

/** Checks metadata: a plain object that survives JSON unchanged (no functions, dates, NaN or NUL). */
export function validateMetadata(metadata: unknown): Record<string, unknown> {
  if (metadata === undefined) return {};
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata))
    throw invalid("metadata must be a plain object");
  let text: string;
  try {
    text = JSON.stringify(metadata);
  } catch (cause) {
    throw new SandboxError("Validation", "metadata must be JSON-serializable", { cause, retryable: false });
  }
  if (text.includes("\\u0000")) throw invalid("metadata must not contain NUL characters");
  const roundTrip = JSON.parse(text) as Record<string, unknown>;
  if (!sameJson(metadata, roundTrip)) {
    throw invalid(
      "metadata must hold only JSON values (strings, finite numbers, booleans, null, arrays, objects)",
    );
  }
  return roundTrip;
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const proto = Object.getPrototypeOf(a);
  if (!Array.isArray(a) && proto !== Object.prototype && proto !== null) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  return keysA.every((key) =>
    sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
  );
}

/** Checks a duration in milliseconds. */
export function validateDuration(value: unknown, name: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0)
    throw invalid(`${name} must be a positive number of milliseconds`);
  return value;
}
