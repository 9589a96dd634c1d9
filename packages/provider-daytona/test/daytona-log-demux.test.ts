/**
 * The demultiplexer of Daytona's labelled session logs, on byte streams cut into frames at every position:
 * what it delivers never depends on where the frames were cut, nothing is held back but a partial marker
 * at a frame's end, and bytes are delivered as they are (invalid UTF-8 included).
 */
import { describe, expect, test } from "vitest";
import { DaytonaLogDemux } from "../src/daytona-log-demux.js";

const OUT = [1, 1, 1];
const ERR = [2, 2, 2];
const text = (s: string) => [...new TextEncoder().encode(s)];

function run(frames: readonly Uint8Array[]) {
  const out: number[] = [];
  const err: number[] = [];
  const calls: Array<["out" | "err", number[]]> = [];
  const demux = new DaytonaLogDemux({
    onStdout: (chunk) => {
      out.push(...chunk);
      calls.push(["out", [...chunk]]);
    },
    onStderr: (chunk) => {
      err.push(...chunk);
      calls.push(["err", [...chunk]]);
    },
  });
  const afterFrame: number[] = [];
  for (const frame of frames) {
    demux.push(frame);
    afterFrame.push(out.length + err.length);
  }
  demux.end();
  return { out, err, calls, afterFrame };
}

function cut(bytes: readonly number[], at: readonly number[]): Uint8Array[] {
  const points = [0, ...at, bytes.length];
  return points.slice(1).map((end, i) => Uint8Array.from(bytes.slice(points[i], end)));
}

/** A log as the daemon writes it: labelled lines, invalid UTF-8, marker-like runs of 1s and 2s inside. */
const LOG = [
  ...OUT,
  ...text("a\n"),
  ...ERR,
  ...text("oops é\n"),
  ...OUT,
  0xff,
  0xfe,
  1,
  1,
  0x0a,
  ...OUT,
  2,
  2,
  0xc3,
  ...ERR,
  1,
  2,
  2,
  ...OUT,
  ...text("end"),
  1,
];
const EXPECTED_OUT = [...text("a\n"), 0xff, 0xfe, 1, 1, 0x0a, 2, 2, 0xc3, ...text("end"), 1];
const EXPECTED_ERR = [...text("oops é\n"), 1, 2, 2];

describe("DaytonaLogDemux", () => {
  test("one frame: stdout and stderr apart, the markers gone, every other byte kept as it is", () => {
    const { out, err } = run([Uint8Array.from(LOG)]);
    expect(out).toEqual(EXPECTED_OUT);
    expect(err).toEqual(EXPECTED_ERR);
  });

  test("cut at any one position, and at any two: the same bytes on the same streams", () => {
    for (let i = 1; i < LOG.length; i++) {
      const one = run(cut(LOG, [i]));
      expect([one.out, one.err], `cut at ${i}`).toEqual([EXPECTED_OUT, EXPECTED_ERR]);
      for (let j = i + 1; j < LOG.length; j++) {
        const two = run(cut(LOG, [i, j]));
        expect([two.out, two.err], `cut at ${i} and ${j}`).toEqual([EXPECTED_OUT, EXPECTED_ERR]);
      }
    }
  });

  test("one byte a frame: the same bytes", () => {
    const { out, err } = run(LOG.map((b) => Uint8Array.of(b)));
    expect(out).toEqual(EXPECTED_OUT);
    expect(err).toEqual(EXPECTED_ERR);
  });

  test("a short line is delivered with its frame (the SDK's reader holds `a\\n` back to the end)", () => {
    const { afterFrame } = run([Uint8Array.from([...OUT, ...text("a\n")]), Uint8Array.from(text("b\n"))]);
    expect(afterFrame).toEqual([2, 4]);
    // A frame that is only a marker delivers nothing, and the line after it at once.
    expect(run([Uint8Array.from(ERR), Uint8Array.from(text("x"))]).afterFrame).toEqual([0, 1]);
  });

  test("only a partial marker at a frame's end waits, until the next frame decides it", () => {
    // `x 01 01`: the two 1s may open a marker; `x` goes at once.
    const held = run([Uint8Array.from([...OUT, 0x78, 1, 1]), Uint8Array.from([0x79])]);
    expect(held.afterFrame).toEqual([1, 4]);
    expect(held.out).toEqual([0x78, 1, 1, 0x79]);
    // `01 02` at the end: the 1 cannot open a marker any more, only the 2 waits.
    const mixed = run([Uint8Array.from([...OUT, 1, 2]), Uint8Array.from([2, 2, 0x7a])]);
    expect(mixed.afterFrame).toEqual([1, 2]);
    expect(mixed).toMatchObject({ out: [1], err: [0x7a] });
    // A marker completed across frames switches the stream.
    const split = run([Uint8Array.from([...OUT, 0x61, 2]), Uint8Array.from([2]), Uint8Array.from([2, 0x62])]);
    expect(split).toMatchObject({ out: [0x61], err: [0x62], afterFrame: [1, 1, 2] });
  });

  test("bytes before any marker are stdout, and a stream that ends inside a marker keeps those bytes", () => {
    expect(run([Uint8Array.from([0x61, 2, 2])])).toMatchObject({ out: [0x61, 2, 2], err: [] });
  });

  test("a command printing the markers itself switches streams, as Daytona's own demultiplexers do", () => {
    const log = [...OUT, ...text("x"), ...ERR, ...text("forged"), ...OUT, ...text("y")];
    expect(run([Uint8Array.from(log)])).toMatchObject({ out: text("xy"), err: text("forged") });
  });

  test("chunks handed out are copies: the frame's buffer may be reused", () => {
    const kept: Uint8Array[] = [];
    const demux = new DaytonaLogDemux({ onStdout: (c) => kept.push(c), onStderr: (c) => kept.push(c) });
    const frame = Uint8Array.from([...OUT, 0x61, 0x62, 1]);
    demux.push(frame);
    frame.fill(0);
    demux.push(Uint8Array.of(0x63));
    expect(kept.map((c) => [...c])).toEqual([
      [0x61, 0x62],
      [1, 0x63],
    ]);
  });
});
