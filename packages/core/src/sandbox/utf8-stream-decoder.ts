/**
 * Decodes a stream of byte (or text) chunks to text, keeping multi-byte characters that straddle chunk
 * boundaries intact. Invalid UTF-8 becomes U+FFFD instead of failing, exactly as a streaming
 * `TextDecoder` would (same text for the same bytes, however they are split).
 *
 * It does not use `TextDecoder`'s `stream` option: Node decodes streamed input through ICU into UTF-16 and
 * makes every large chunk an external two-byte string, 2 bytes per ASCII character outside the JS heap,
 * which the garbage collector barely notices (a 4 MiB chunk became 8 MiB of memory that lived until a full
 * collection). Each chunk is decoded whole instead, up to the last complete character; the incomplete end
 * (at most 3 bytes) waits for the next chunk. Whole decodes take the runtime's fast path and give ordinary
 * heap strings, one byte per character when the text is Latin-1.
 */
export class Utf8StreamDecoder {
  /** For the stream's first bytes: drops a leading byte-order mark, as a streaming decoder does once. */
  private readonly first = new TextDecoder("utf-8", { fatal: false });
  /** For everything after: a U+FEFF inside the stream is text. */
  private readonly rest = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
  private started = false;
  /** The start of a character whose continuation bytes have not arrived yet (1 to 3 bytes). */
  private pending: Uint8Array = new Uint8Array(0);

  /** Text for this chunk; may hold back the start of a character until the next chunk. */
  write(chunk: Uint8Array | string): string {
    if (typeof chunk === "string") return this.end() + chunk;
    let text = "";
    let body = chunk;
    if (this.pending.length > 0) {
      // Complete the held character with the continuation bytes that follow it, no more: what comes after
      // them starts afresh, as it would in a streaming decoder.
      const held = this.pending;
      const missing = sequenceLength(held[0]!) - held.length;
      let take = 0;
      while (take < missing && take < chunk.length && isContinuation(chunk[take]!)) take++;
      const joined = new Uint8Array(held.length + take);
      joined.set(held);
      joined.set(chunk.subarray(0, take), held.length);
      body = chunk.subarray(take);
      if (take === missing || take < chunk.length) {
        this.pending = new Uint8Array(0);
        text = this.decode(joined);
      } else {
        // The chunk ended before the character did.
        this.pending = joined;
        return "";
      }
    }
    const cut = incompleteTail(body);
    if (cut < body.length) this.pending = body.slice(cut);
    return text + this.decode(body.subarray(0, cut));
  }

  /** Whatever is still held back (an incomplete character becomes U+FFFD). */
  end(): string {
    const held = this.pending;
    this.pending = new Uint8Array(0);
    return this.decode(held);
  }

  private decode(bytes: Uint8Array): string {
    if (bytes.length === 0) return "";
    const decoder = this.started ? this.rest : this.first;
    this.started = true;
    return decoder.decode(bytes);
  }
}

function isContinuation(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

/** Bytes of the sequence a lead byte starts (1 for ASCII and for bytes that cannot start one). */
function sequenceLength(lead: number): number {
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 1;
}

/**
 * Where the incomplete character at the end of `bytes` starts (a lead byte followed by fewer continuation
 * bytes than it needs), or `bytes.length` when the bytes end on a character boundary or on bytes that no
 * later byte can make valid.
 */
function incompleteTail(bytes: Uint8Array): number {
  const end = bytes.length;
  for (let i = end - 1; i >= 0 && i >= end - 3; i--) {
    const byte = bytes[i]!;
    if (isContinuation(byte)) continue;
    const length = sequenceLength(byte);
    return length > 1 && end - i < length ? i : end;
  }
  return end;
}
