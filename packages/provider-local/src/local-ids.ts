import { randomBytes } from "node:crypto";
import { localError } from "./local-errors.js";

// Lowercase letters, digits, `-` and `_`, starting with a letter or digit: never `.`, `..`, a slash or empty,
// so an id can only ever name a direct child of the state root.
const ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

const ID_LENGTH = 20;
// Random bytes drawn in batches: every command needs a fresh id, and one call into the system's generator
// per 200 ids costs less than one per id.
let pool = Buffer.alloc(0);
let used = 0;

/** A fresh random id (20 characters of `[a-z0-9]`, about 103 bits). */
export function newLocalId(): string {
  if (used + ID_LENGTH > pool.length) {
    pool = randomBytes(ID_LENGTH * 200);
    used = 0;
  }
  let id = "";
  for (let i = 0; i < ID_LENGTH; i++) id += ALPHABET[(pool[used + i] as number) % ALPHABET.length];
  // Never hand the same bytes out twice.
  pool.fill(0, used, used + ID_LENGTH);
  used += ID_LENGTH;
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
