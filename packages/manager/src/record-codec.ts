import { SandboxError } from "@sbox/core/spec";
import type { RecordError } from "./sandbox-record.js";

/** A `RecordError` as JSON: the instant as epoch milliseconds. */
export interface StoredRecordError extends Omit<RecordError, "at"> {
  at: number;
}

/** Turns a record error into its JSON form (for SQL stores). */
export function encodeRecordError(error: RecordError | null): StoredRecordError | null {
  if (error === null) return null;
  return { ...error, at: error.at.getTime() };
}

/** Restores a record error from its JSON form. */
export function decodeRecordError(stored: unknown): RecordError | null {
  if (stored === null || stored === undefined) return null;
  const value = stored as StoredRecordError;
  return { ...value, at: new Date(value.at) };
}

/** Parses a JSON column, reporting corruption as a `Provider` error of the store rather than a bare SyntaxError. */
export function parseJsonColumn<T>(text: unknown, column: string, id: string): T {
  if (typeof text !== "string") return text as T;
  try {
    return JSON.parse(text) as T;
  } catch (cause) {
    throw new SandboxError("Provider", `store: column ${column} of record ${id} is not valid JSON`, {
      cause,
      retryable: false,
    });
  }
}
