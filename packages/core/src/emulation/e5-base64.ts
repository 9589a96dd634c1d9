/**
 * Base64 for moving bytes through exec: shells print binary as base64 and the core decodes it, because a
 * provider's exec may only carry text. Written here (not `Buffer`) so the core runs on any JS runtime.
 */

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const DECODE = new Int16Array(256).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i;

/** Encodes bytes as one unwrapped base64 line. */
export function encodeBase64(bytes: Uint8Array): string {
  const parts: string[] = [];
  // Work in slices so the intermediate strings stay small and `String.fromCharCode` gets bounded argument lists.
  const slice = 3 * 8192;
  for (let start = 0; start < bytes.length; start += slice) {
    const end = Math.min(start + slice, bytes.length);
    const codes: number[] = [];
    let i = start;
    for (; i + 3 <= end; i += 3) {
      const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
      codes.push(
        ALPHABET.charCodeAt(n >>> 18),
        ALPHABET.charCodeAt((n >>> 12) & 63),
        ALPHABET.charCodeAt((n >>> 6) & 63),
        ALPHABET.charCodeAt(n & 63),
      );
    }
    const rest = end - i;
    if (rest === 1) {
      const n = bytes[i]! << 16;
      codes.push(ALPHABET.charCodeAt(n >>> 18), ALPHABET.charCodeAt((n >>> 12) & 63), 61, 61);
    } else if (rest === 2) {
      const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
      codes.push(
        ALPHABET.charCodeAt(n >>> 18),
        ALPHABET.charCodeAt((n >>> 12) & 63),
        ALPHABET.charCodeAt((n >>> 6) & 63),
        61,
      );
    }
    parts.push(String.fromCharCode(...codes));
  }
  return parts.join("");
}

/**
 * Decodes base64 as printed by `base64` (GNU or busybox): line breaks and any other byte outside the
 * alphabet are skipped, `=` ends the data.
 */
export function decodeBase64(text: Uint8Array | string): Uint8Array {
  const input = typeof text === "string" ? new TextEncoder().encode(text) : text;
  const out = new Uint8Array(Math.floor((input.length * 3) / 4) + 3);
  let length = 0;
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < input.length; i++) {
    const c = input[i]!;
    if (c === 61) break;
    const v = DECODE[c]!;
    if (v < 0) continue;
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[length++] = (acc >>> bits) & 0xff;
    }
  }
  return out.slice(0, length);
}
