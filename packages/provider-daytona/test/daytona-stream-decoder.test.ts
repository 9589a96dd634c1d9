/**
 * The decoder of the supervisor's encoding (one line of base64 per chunk the command printed), on lines cut
 * at every position: the bytes come back exactly, each chunk as soon as its line is complete; anything
 * that is not the encoding — a shell's message, a forged or truncated line, a line far too long — is a
 * `Provider` SandboxError, never output.
 */
import { SandboxError } from "@sbox/core/spec";
import { describe, expect, test } from "vitest";
import { DaytonaStreamDecoder, decodeDaytonaStream } from "../src/daytona-stream-decoder.js";

const encoded = (bytes: number[]) => `${Buffer.from(bytes).toString("base64")}\n`;

describe("the supervisor's encoding, decoded", () => {
  test("every byte value comes back exactly, whatever the cuts; each chunk once its line is complete", () => {
    const chunks = [[0, 1, 2, 10, 13], [...Array(256).keys()], [0x61], [0xff, 0xfe, 0]];
    const log = new TextEncoder().encode(chunks.map(encoded).join(""));
    for (let cut = 1; cut < log.length; cut++) {
      const out: number[][] = [];
      const decoder = new DaytonaStreamDecoder("stdout", (bytes) => out.push([...bytes]));
      decoder.push(log.subarray(0, cut));
      decoder.push(log.subarray(cut));
      decoder.end();
      expect(out).toEqual(chunks);
    }
    const live: number[][] = [];
    const decoder = new DaytonaStreamDecoder("stderr", (bytes) => live.push([...bytes]));
    decoder.push("YQ");
    expect(live).toEqual([]);
    decoder.push("==\nYg");
    expect(live).toEqual([[0x61]]);
  });

  test("a whole answer decodes at once; an empty one is no output", () => {
    expect([...decodeDaytonaStream("stdout", "YQBi\nCg==\n")]).toEqual([0x61, 0, 0x62, 0x0a]);
    expect(decodeDaytonaStream("stderr", "").length).toBe(0);
  });

  test.each([
    ["a shell's own message", "sh: 1: cannot create /tmp/x: Permission denied\n"],
    ["an empty line", "YQ==\n\n"],
    ["base64 of the wrong length", "YQ=\n"],
    ["padding in the middle", "YQ==YQ==\n"],
    ["a label inside the line", "YQ\u0001\u0001\u0001==\n"],
    ["non-ASCII bytes", "YQ\u00e9=\n"],
    ["a line cut short at the end", "YQ==\nYWJj"],
  ])("%s is a Provider error, never output", (_what, log) => {
    const out: Uint8Array[] = [];
    const decoder = new DaytonaStreamDecoder("stderr", (bytes) => out.push(bytes));
    let error: unknown;
    try {
      decoder.push(log);
      decoder.end();
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SandboxError);
    expect(error).toMatchObject({ code: "Provider" });
    expect((error as Error).message).toMatch(/stderr log/);
    expect(out.every((bytes) => Buffer.from(bytes).toString() === "a")).toBe(true);
  });

  test("a line far longer than the supervisor's is refused before the end of the line", () => {
    const decoder = new DaytonaStreamDecoder("stdout", () => {});
    expect(() => decoder.push("QUJD".repeat(4096))).toThrow(/too long/);
  });
});
