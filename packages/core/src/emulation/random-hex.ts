/**
 * `bytes` random bytes as lowercase hex, from the Web Crypto API that Node 20, Deno, Bun and browsers
 * share — so the core needs no `node:crypto` import and stays dependency-free.
 */
export function randomHex(bytes: number): string {
  const buffer = new Uint8Array(bytes);
  globalThis.crypto.getRandomValues(buffer);
  let out = "";
  for (const byte of buffer) out += byte.toString(16).padStart(2, "0");
  return out;
}
