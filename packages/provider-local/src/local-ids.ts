import { randomBytes } from "node:crypto";
import { localError } from "./local-errors.js";

// Lowercase letters, digits, `-` and `_`, starting with a letter or digit: never `.`, `..`, a slash or empty,
// so an id can only ever name a direct child of the state root.
const ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/** A fresh random id (20 characters of `[a-z0-9]`, about 103 bits). */
export function newLocalId(): string {
  const bytes = randomBytes(20);
  let id = "";
  for (const byte of bytes) id += ALPHABET[byte % ALPHABET.length];
  return id;
}

/**
 * Returns `id` when it is a well-formed local id, else throws `Validation` without touching the filesystem.
 * Ids that could name a path (`..`, `/etc`, `a/b`, empty) are rejected here.
 */
export function assertLocalId(id: unknown, what = "sandbox id"): string {
  if (typeof id !== "string" || !ID_PATTERN.test(id)) {
    const shown =
      typeof id === "string" ? JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}...` : id) : typeof id;
    throw localError(
      "Validation",
      `invalid ${what} ${shown}: expected 1-64 characters of [a-z0-9_-] starting with a letter or digit`,
    );
  }
  return id;
}
