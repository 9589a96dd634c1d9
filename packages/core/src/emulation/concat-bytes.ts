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
