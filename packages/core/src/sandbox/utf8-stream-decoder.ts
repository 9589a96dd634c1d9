/**
 * Decodes a stream of byte (or text) chunks to text, keeping multi-byte characters that straddle chunk
 * boundaries intact. Invalid UTF-8 becomes U+FFFD instead of failing.
 */
export class Utf8StreamDecoder {
  private readonly decoder = new TextDecoder("utf-8", { fatal: false });

  /** Text for this chunk; may hold back the start of a character until the next chunk. */
  write(chunk: Uint8Array | string): string {
    if (typeof chunk === "string") return this.decoder.decode() + chunk;
    return this.decoder.decode(chunk, { stream: true });
  }

  /** Whatever is still held back. */
  end(): string {
    return this.decoder.decode();
  }
}
