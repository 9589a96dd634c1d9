/** Joins byte chunks into one array; when only one chunk holds bytes, that chunk itself is returned. */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  const nonEmpty = chunks.filter((chunk) => chunk.length > 0);
  if (nonEmpty.length === 1) return nonEmpty[0] as Uint8Array;
  let length = 0;
  for (const chunk of nonEmpty) length += chunk.length;
  const out = new Uint8Array(length);
  let at = 0;
  for (const chunk of nonEmpty) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

/**
 * Bytes out of a larger buffer as a plain `Uint8Array` of their own: a view when large (no copy), a copy
 * when small, since a small Node `Buffer` may be a slice of a shared pool (whose other bytes must not
 * travel with the result) and a small view would keep a large buffer alive.
 */
export function ownBytes(bytes: Uint8Array): Uint8Array {
  if (bytes.length < 64 * 1024) return new Uint8Array(bytes);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
}
