/**
 * The output decoder gives, for any bytes split anywhere, the text a streaming `TextDecoder` gives: valid
 * characters across chunk boundaries, U+FFFD for every invalid or truncated sequence, one leading BOM
 * dropped and later ones kept.
 */
import { describe, expect, test } from "vitest";
import { Utf8StreamDecoder } from "./utf8-stream-decoder.js";

/** What a streaming `TextDecoder` makes of the chunks (the reference). */
function reference(chunks: readonly Uint8Array[]): string {
  const decoder = new TextDecoder("utf-8", { fatal: false });
  let text = "";
  for (const chunk of chunks) text += decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
}

function decoded(chunks: readonly Uint8Array[]): string {
  const decoder = new Utf8StreamDecoder();
  let text = "";
  for (const chunk of chunks) text += decoder.write(chunk);
  return text + decoder.end();
}

/** A small deterministic generator, so a failure names a seed that reproduces it. */
function random(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

/** Bytes that are mostly UTF-8 of every length, with stray, truncated and overlong bytes mixed in. */
function mixedBytes(next: () => number, length: number): Uint8Array {
  const pieces = ["a", "é", "€", "😀", "\uFEFF", "\n"].map((s) => new TextEncoder().encode(s));
  const strays = [0x80, 0xbf, 0xc0, 0xc1, 0xc2, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 0xa0, 0x90];
  const out: number[] = [];
  while (out.length < length) {
    if (next() < 0.25) out.push(strays[Math.floor(next() * strays.length)]!);
    else out.push(...pieces[Math.floor(next() * pieces.length)]!);
  }
  return Uint8Array.from(out.slice(0, length));
}

function splitAt(bytes: Uint8Array, next: () => number): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  let at = 0;
  while (at < bytes.length) {
    const size = Math.floor(next() * 6);
    chunks.push(bytes.subarray(at, at + size));
    at += size;
  }
  return chunks;
}

describe("Utf8StreamDecoder", () => {
  test("characters split across chunks at every byte are joined", () => {
    const bytes = new TextEncoder().encode("aé€😀b");
    for (let cut = 0; cut <= bytes.length; cut++) {
      for (let cut2 = cut; cut2 <= bytes.length; cut2++) {
        const chunks = [bytes.subarray(0, cut), bytes.subarray(cut, cut2), bytes.subarray(cut2)];
        expect(decoded(chunks)).toBe("aé€😀b");
      }
    }
  });

  test("invalid, truncated and overlong sequences become U+FFFD as a streaming TextDecoder makes them", () => {
    const cases = [
      [0xe2, 0x82],
      [0xe2, 0x41],
      [0xf0, 0x9f, 0x98],
      [0xe0, 0x80, 0xbf],
      [0xed, 0xa0, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0xc0, 0xaf],
      [0xff, 0xfe, 0x41],
      [0x80, 0x80, 0xc2],
    ].map((bytes) => Uint8Array.from(bytes));
    for (const bytes of cases) {
      for (let cut = 0; cut <= bytes.length; cut++) {
        const chunks = [bytes.subarray(0, cut), bytes.subarray(cut)];
        expect(decoded(chunks), `${[...bytes]} cut at ${cut}`).toBe(reference(chunks));
      }
    }
  });

  test("random mixed bytes split at random give the streaming TextDecoder's text", () => {
    for (let seed = 1; seed <= 400; seed++) {
      const next = random(seed);
      const chunks = splitAt(mixedBytes(next, 1 + Math.floor(next() * 64)), next);
      expect(decoded(chunks), `seed ${seed}`).toBe(reference(chunks));
    }
  });

  test("one leading byte-order mark is dropped, also when split; later ones are text", () => {
    const bom = [0xef, 0xbb, 0xbf];
    const bytes = Uint8Array.from([...bom, 0x61, ...bom, 0x62]);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const chunks = [bytes.subarray(0, cut), bytes.subarray(cut)];
      expect(decoded(chunks)).toBe("a\uFEFFb");
    }
    expect(decoded([new Uint8Array(0), Uint8Array.from(bom), Uint8Array.from([0x63])])).toBe("c");
  });

  test("a string chunk flushes what was held and passes through", () => {
    const decoder = new Utf8StreamDecoder();
    expect(decoder.write(Uint8Array.from([0x61, 0xe2, 0x82]))).toBe("a");
    expect(decoder.write("text")).toBe("\uFFFDtext");
    expect(decoder.end()).toBe("");
  });

  test("a large ASCII chunk decodes to the same text", () => {
    const bytes = new Uint8Array(1024 * 1024).fill(0x78);
    bytes[bytes.length - 1] = 0xc3;
    const decoder = new Utf8StreamDecoder();
    const text = decoder.write(bytes);
    expect(text.length).toBe(bytes.length - 1);
    expect(decoder.write(Uint8Array.from([0xa9]))).toBe("é");
  });
});
