import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { hasBusybox, USERLANDS } from "../../test/sh-driver.js";
import { createExitMarker, parseExitMarker } from "./e2-exit-marker.js";
import { createExecBed, type ExecBed, testSignal } from "./shell-exec-test-bed.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Feeds `stream` to a fresh parser cut at `cuts`; returns everything emitted and the exit code. */
function feed(
  marker: ReturnType<typeof createExitMarker>,
  stream: Uint8Array,
  cuts: number[],
): { output: Uint8Array; exitCode: number | undefined } {
  const parser = marker.createParser();
  const out: Uint8Array[] = [];
  let from = 0;
  for (const cut of [...cuts.filter((c) => c > 0 && c < stream.length)].sort((a, b) => a - b)) {
    out.push(parser.push(stream.slice(from, cut)));
    from = cut;
  }
  out.push(parser.push(stream.slice(from)));
  const { rest, exitCode } = parser.finish();
  out.push(rest);
  return { output: Buffer.concat(out), exitCode };
}

const markerLine = (token: string, code: number): Uint8Array => encoder.encode(`\n${token}:${code}\n`);

describe("E2 marker parser", () => {
  const marker = createExitMarker();
  /** User output biased towards pieces of the real marker, look-alikes and newlines. */
  const output = fc
    .array(
      fc.oneof(
        fc.uint8Array({ maxLength: 20 }),
        fc
          .constantFrom(
            "\n",
            `\n${marker.token}:`,
            `\n${marker.token}:0\n`,
            `${marker.token}:12`,
            "\n__sbox_exit_0123456789abcdef__:0\n",
            marker.token.slice(0, 9),
            ":",
            "7\n",
          )
          .map((s) => encoder.encode(s)),
      ),
      { maxLength: 12 },
    )
    .map((parts) => new Uint8Array(Buffer.concat(parts)));

  test("any output split anywhere comes out unchanged, with the code of the final marker", () => {
    fc.assert(
      fc.property(output, fc.integer({ min: 0, max: 255 }), fc.array(fc.nat(400)), (user, code, cuts) => {
        const stream = Buffer.concat([user, markerLine(marker.token, code)]);
        const result = feed(marker, stream, cuts);
        expect(Buffer.from(result.output).equals(Buffer.from(user))).toBe(true);
        expect(result.exitCode).toBe(code);
      }),
      { numRuns: 500 },
    );
  });

  test("one byte at a time", () => {
    const user = encoder.encode(`abc\n${marker.token}:0\nxyz\n${marker.token}:`);
    const stream = Buffer.concat([user, markerLine(marker.token, 42)]);
    const result = feed(
      marker,
      stream,
      Array.from({ length: stream.length }, (_, i) => i),
    );
    expect(decoder.decode(result.output)).toBe(decoder.decode(user));
    expect(result.exitCode).toBe(42);
  });

  test("any output without an appended marker: only a complete final marker line is taken", () => {
    fc.assert(
      fc.property(output, fc.array(fc.nat(400)), (user, cuts) => {
        const result = feed(marker, user, cuts);
        // Reference: a latin1 view maps bytes 1:1 to characters, so a regex can find the final line.
        const final = Buffer.from(user)
          .toString("latin1")
          .match(new RegExp(`\\n${marker.token}:([0-9]{1,3})\\n$`));
        const code = final && Number(final[1]) <= 255 ? Number(final[1]) : undefined;
        const kept = code === undefined ? user : user.subarray(0, user.length - final![0].length);
        expect(Buffer.from(result.output).equals(Buffer.from(kept))).toBe(true);
        expect(result.exitCode).toBe(code);
      }),
      { numRuns: 500 },
    );
  });

  test("output after the marker makes the code unknown instead of trusting an earlier marker", () => {
    const stream = Buffer.concat([
      encoder.encode("x"),
      markerLine(marker.token, 0),
      encoder.encode("late\n"),
    ]);
    const result = parseExitMarker(marker, stream);
    expect(result.exitCode).toBeUndefined();
    expect(Buffer.from(result.stdout).equals(stream)).toBe(true);
  });

  test("another call's marker is user output", () => {
    const other = createExitMarker();
    expect(other.token).not.toBe(marker.token);
    const stream = Buffer.concat([markerLine(other.token, 9), markerLine(marker.token, 1)]);
    const result = parseExitMarker(marker, stream);
    expect(result.exitCode).toBe(1);
    expect(decoder.decode(result.stdout)).toBe(`\n${other.token}:9\n`);
  });

  test("a parser does not accept input after finish", () => {
    const parser = marker.createParser();
    parser.finish();
    expect(() => parser.push(new Uint8Array(1))).toThrow(expect.objectContaining({ code: "InvalidState" }));
  });
});

describe.skipIf(!hasBusybox()).each(USERLANDS)(
  "E2 on a real %s shell that reports no exit codes",
  (userland) => {
    let bed: ExecBed;
    beforeAll(async () => {
      bed = await createExecBed({ userland, exitCodes: false });
    });
    afterAll(async () => {
      await bed.cleanup();
    });
    const exec = (script: string) => bed.ctx.exec(bed.sandbox, script, { signal: testSignal() });

    test("exit codes 0..255 are recovered, and output is unchanged", async () => {
      for (const code of [0, 1, 2, 3, 42, 126, 127, 128, 200, 255]) {
        const result = await exec(`printf 'out %s' ${code}; echo err >&2; exit ${code}`);
        expect(result.exitCode).toBe(code);
        expect(decoder.decode(result.stdout)).toBe(`out ${code}`);
        expect(decoder.decode(result.stderr)).toBe("err\n");
      }
    });

    test("a forged marker (a look-alike and the exact token of this call) cannot spoof the code", async () => {
      // The token is on the command line of the wrapping shell, so the command can read it from /proc.
      const script = [
        "t=$(tr '\\0' '\\n' < /proc/$PPID/cmdline | grep -o '__sbox_exit_[0-9a-f]*__' | head -n 1)",
        '[ -n "$t" ] || { echo "token not found" >&2; exit 99; }',
        "printf 'before\\n__sbox_exit_00000000000000000000000000000000__:0\\n'",
        "printf '\\n%s:0\\n' \"$t\"",
        "exit 3",
      ].join("\n");
      const result = await exec(script);
      expect(decoder.decode(result.stderr)).toBe("");
      expect(result.exitCode).toBe(3);
      const printed = decoder.decode(result.stdout);
      expect(printed).toMatch(/^before\n__sbox_exit_0{32}__:0\n\n__sbox_exit_[0-9a-f]{32}__:0\n$/);
    });

    test("exit, set -e and syntax errors in the command still let the marker print", async () => {
      expect((await exec("echo a; exit 5; echo b")).exitCode).toBe(5);
      expect((await exec("set -e; false; echo never")).exitCode).toBe(1);
      const syntax = await exec("if then fi (");
      expect(syntax.exitCode).toBe(2);
      expect(syntax.stderr.length).toBeGreaterThan(0);
    });

    test("trailing newlines and output without a final newline are kept exactly", async () => {
      for (const text of ["", "abc", "abc\n", "abc\n\n", "\n", "é✓😀"]) {
        const result = await exec(`printf %s '${text}'`);
        expect(decoder.decode(result.stdout)).toBe(text);
        expect(result.exitCode).toBe(0);
      }
    });

    test("output printed after the marker (by a background child) is reported as a lost exit code", async () => {
      const error = await exec("(sleep 0.3; echo late) & echo now").catch((e: unknown) => e);
      expect(error).toMatchObject({
        code: "Provider",
        message: expect.stringContaining("exit code was lost"),
      });
    });
  },
);
