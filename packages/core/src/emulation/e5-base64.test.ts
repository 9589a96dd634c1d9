import { execFileSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { decodeBase64, decodeBase64Portable, encodeBase64, encodeBase64Portable } from "./e5-base64.js";

const wrap = (text: string, width: number): string => text.replace(new RegExp(`(.{${width}})`, "g"), "$1\n");

describe("base64 for exec transport", () => {
  test("the runtime codec and the portable one agree on any bytes, any slice of a larger buffer", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 70_000 }), fc.nat(16), (bytes, skip) => {
        const view = bytes.subarray(Math.min(skip, bytes.length));
        const text = encodeBase64(view);
        expect(encodeBase64Portable(view)).toBe(text);
        expect(text).toBe(Buffer.from(view).toString("base64"));
        expect(decodeBase64(text)).toEqual(new Uint8Array(view));
        expect(decodeBase64Portable(text)).toEqual(new Uint8Array(view));
      }),
      { numRuns: 60 },
    );
  });

  test("both decode what GNU and busybox base64 print: wrapped lines, a final newline, padding", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 5_000 }), fc.constantFrom(76, 64, 4), (bytes, width) => {
        const printed = new TextEncoder().encode(`${wrap(Buffer.from(bytes).toString("base64"), width)}\n`);
        expect(decodeBase64(printed)).toEqual(new Uint8Array(bytes));
        expect(decodeBase64Portable(printed)).toEqual(new Uint8Array(bytes));
      }),
      { numRuns: 60 },
    );
    const real = execFileSync("base64", { input: Buffer.from("binary \u0000\u00ff bytes ".repeat(40)) });
    expect(Buffer.from(decodeBase64(real)).toString()).toBe("binary \u0000\u00ff bytes ".repeat(40));
  });

  test("bytes outside the alphabet are skipped and = ends the data, in both codecs", () => {
    for (const decode of [decodeBase64, decodeBase64Portable]) {
      expect([...decode("YW*J\tj")]).toEqual([97, 98, 99]);
      expect([...decode("YQ==YWJj")]).toEqual([97]);
      expect([...decode("")]).toEqual([]);
      expect([...decode(new TextEncoder().encode("YWJjZA==\n"))]).toEqual([97, 98, 99, 100]);
    }
  });

  test("a decoded small result owns its bytes (no view into a shared pool)", () => {
    const decoded = decodeBase64("YWJj");
    expect(decoded.byteOffset).toBe(0);
    expect(decoded.buffer.byteLength).toBe(3);
    expect(decoded).toBeInstanceOf(Uint8Array);
    expect(Buffer.isBuffer(decoded)).toBe(false);
  });
});
