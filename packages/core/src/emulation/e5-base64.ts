/**
 * Base64 for moving bytes through exec: shells print binary as base64 and the core decodes it, because a
 * provider's exec may only carry text. Where the runtime has Node's `Buffer` (Node, Bun, Deno's Node
 * layer) its native codec does the work (over 1 GB/s); elsewhere a portable codec written here does (the
 * core has no runtime dependencies and must run on any JS runtime). Both decode the same way: bytes outside
 * the alphabet (line breaks of `base64` output) are skipped and `=` ends the data.
 */

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const ENCODE = new Uint8Array(64);
for (let i = 0; i < 64; i++) ENCODE[i] = ALPHABET.charCodeAt(i);
const DECODE = new Int16Array(256).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i;
const PAD = 61;

/** The part of Node's `Buffer` this module uses (a `Uint8Array` whose `toString` takes an encoding). */
interface NativeBuffer {
  readonly buffer: ArrayBufferLike;
  readonly byteOffset: number;
  readonly byteLength: number;
  toString(encoding: "base64" | "latin1"): string;
}
interface NativeBufferConstructor {
  from(buffer: ArrayBufferLike, byteOffset: number, length: number): NativeBuffer;
  from(text: string, encoding: "base64"): NativeBuffer;
}

/** The runtime's `Buffer`, when it has one. Looked up once; tests may pass their own to the codec. */
const RUNTIME_BUFFER = (globalThis as { Buffer?: NativeBufferConstructor }).Buffer;

/** Below this, a decoded `Buffer` may be a slice of Node's shared pool: the bytes are copied out of it. */
const POOLED_BELOW = 8 * 1024;

/** Encodes bytes as one unwrapped base64 line. */
export function encodeBase64(bytes: Uint8Array): string {
  if (RUNTIME_BUFFER)
    return RUNTIME_BUFFER.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
  return encodeBase64Portable(bytes);
}

/**
 * Decodes base64 as printed by `base64` (GNU or busybox): line breaks and any other byte outside the
 * alphabet are skipped, `=` ends the data.
 */
export function decodeBase64(text: Uint8Array | string): Uint8Array {
  if (!RUNTIME_BUFFER) return decodeBase64Portable(text);
  const source =
    typeof text === "string"
      ? text
      : RUNTIME_BUFFER.from(text.buffer, text.byteOffset, text.byteLength).toString("latin1");
  const decoded = RUNTIME_BUFFER.from(source, "base64");
  const view = new Uint8Array(decoded.buffer, decoded.byteOffset, decoded.byteLength);
  return decoded.byteLength < POOLED_BELOW ? view.slice() : view;
}

/** {@link encodeBase64} without `Buffer`: for runtimes that lack it (and to test the two agree). */
export function encodeBase64Portable(bytes: Uint8Array): string {
  const parts: string[] = [];
  const latin1 = new TextDecoder("latin1");
  // Slices keep the intermediate buffers small; 3 * 16384 input bytes give 65536 output characters.
  const slice = 3 * 16384;
  const out = new Uint8Array((slice / 3) * 4);
  for (let start = 0; start < bytes.length; start += slice) {
    const end = Math.min(start + slice, bytes.length);
    let o = 0;
    let i = start;
    for (; i + 3 <= end; i += 3) {
      const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
      out[o++] = ENCODE[n >>> 18]!;
      out[o++] = ENCODE[(n >>> 12) & 63]!;
      out[o++] = ENCODE[(n >>> 6) & 63]!;
      out[o++] = ENCODE[n & 63]!;
    }
    const rest = end - i;
    if (rest > 0) {
      const n = (bytes[i]! << 16) | (rest === 2 ? bytes[i + 1]! << 8 : 0);
      out[o++] = ENCODE[n >>> 18]!;
      out[o++] = ENCODE[(n >>> 12) & 63]!;
      out[o++] = rest === 2 ? ENCODE[(n >>> 6) & 63]! : PAD;
      out[o++] = PAD;
    }
    // Every byte is ASCII, which every single-byte decoding maps to itself.
    parts.push(latin1.decode(out.subarray(0, o)));
  }
  return parts.join("");
}

/** {@link decodeBase64} without `Buffer`. */
export function decodeBase64Portable(text: Uint8Array | string): Uint8Array {
  const input = typeof text === "string" ? new TextEncoder().encode(text) : text;
  const out = new Uint8Array(Math.floor((input.length * 3) / 4) + 3);
  let length = 0;
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < input.length; i++) {
    const c = input[i]!;
    if (c === PAD) break;
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
