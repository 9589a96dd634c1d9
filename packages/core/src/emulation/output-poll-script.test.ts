/**
 * The poll's framing on a real shell (both userlands): raw output framed by byte counts and base64 output
 * framed by lines give the same bytes back, binary included, and one run's output never shifts what the
 * poll says about the next run, not even when its file shrinks under the poll.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { hasBusybox, USERLANDS } from "../../test/sh-driver.js";
import { SandboxError } from "../errors/sandbox-error.js";
import { createTestBed, type TestBed } from "./e5-test-context.js";
import {
  type PollMember,
  pollFunctions,
  pollScript,
  type RunPoll,
  takeRunPoll,
} from "./output-poll-script.js";

const context = { provider: "test", what: "the test run" };

function member(dir: string, offsets = { out: 0, err: 0 }): PollMember {
  return { dir, offsets, seen: offsets, removeWhenDone: false, proven: false, proofsSeen: 0 };
}

/** Parses every member's part of one poll's stdout, in order. */
function parseAll(stdout: Uint8Array, count: number, raw: boolean, cap: number): RunPoll[] {
  const polls: RunPoll[] = [];
  let rest = stdout;
  for (let i = 0; i < count; i++) {
    const taken = takeRunPoll(rest, { raw, cap }, context);
    polls.push(taken.poll);
    rest = taken.rest;
  }
  expect(rest.length).toBe(0);
  return polls;
}

describe.skipIf(!hasBusybox()).each(USERLANDS)("poll framing on %s", (userland) => {
  let bed: TestBed;
  const binary = Uint8Array.from([0, 10, 255, 13, 10, 0x47, 10, 0x52, 32, 49, 10, 128, 0]);
  beforeAll(async () => {
    bed = await createTestBed({ userland });
    for (const [name, out, err] of [
      ["a", binary, "err a\n"],
      ["b", "out b", new Uint8Array(0)],
    ] as const) {
      mkdirSync(join(bed.ctx.stateDir, name));
      writeFileSync(join(bed.ctx.stateDir, name, "out"), out);
      writeFileSync(join(bed.ctx.stateDir, name, "err"), err);
      writeFileSync(join(bed.ctx.stateDir, name, "exit"), "3\n");
    }
  });
  afterAll(async () => {
    await bed.cleanup();
  });

  test.each([true, false])(
    "raw %s: every run's bytes come back, binary included, and nothing after",
    async (raw) => {
      const members = [member("a", { out: 2, err: 0 }), member("gone"), member("b")];
      const script = pollScript({ stateDir: bed.ctx.stateDir, members, cap: 1024, wake: "poll/w", raw });
      const result = await bed.sh(script);
      expect(result.exitCode).toBe(0);
      const [a, gone, b] = parseAll(result.stdout, 3, raw, 1024);
      expect([...a!.stdout]).toEqual([...binary.subarray(2)]);
      expect(new TextDecoder().decode(a!.stderr)).toBe("err a\n");
      expect(a!.sizes).toEqual({ out: binary.length, err: 6 });
      expect(a!.exitRecord).toBe("3");
      expect(gone!.gone).toBe(true);
      expect(new TextDecoder().decode(b!.stdout)).toBe("out b");
      expect(b!.stderr.length).toBe(0);
    },
  );

  test("a cap cuts each stream, and the counts say so", async () => {
    const script = pollScript({
      stateDir: bed.ctx.stateDir,
      members: [member("a"), member("b")],
      cap: 4,
      wake: "poll/w",
      raw: true,
    });
    const [a, b] = parseAll((await bed.sh(script)).stdout, 2, true, 4);
    expect([...a!.stdout]).toEqual([...binary.subarray(0, 4)]);
    expect(new TextDecoder().decode(a!.stderr)).toBe("err ");
    expect(a!.done).toBe(false);
    expect(new TextDecoder().decode(b!.stdout)).toBe("out ");
  });

  test("bytes of a file that shrank are zeros, exactly as many as announced", async () => {
    writeFileSync(join(bed.root, "short"), "abc");
    const result = await bed.sh(`${pollFunctions()}\nsbox_bytes short 1 6; echo end`);
    expect([...result.stdout]).toEqual([0x62, 0x63, 0, 0, 0, 0, ...new TextEncoder().encode("end\n")]);
  });
});

describe("takeRunPoll", () => {
  const bytes = (text: string) => new TextEncoder().encode(text);
  const header = "R 0 0 3 0 1 - 0\n";

  test("raw counts over the cap or beyond the output are refused, not read past", () => {
    expect(() => takeRunPoll(bytes(`${header}5 0\nabcde`), { raw: true, cap: 4 }, context)).toThrow(
      SandboxError,
    );
    expect(() => takeRunPoll(bytes(`${header}3 2\nabcd`), { raw: true, cap: 8 }, context)).toThrow(
      /unexpected poll output/,
    );
    expect(() => takeRunPoll(bytes(`${header}x 0\n`), { raw: true, cap: 8 }, context)).toThrow(SandboxError);
    expect(() => takeRunPoll(bytes(header), { raw: false, cap: 8 }, context)).toThrow(SandboxError);
  });

  test("raw output is split by its counts, newlines and all; small pieces are copies", () => {
    const stdout = bytes(`${header}3 1\na\nbc${header}0 0\n`);
    const first = takeRunPoll(stdout, { raw: true, cap: 8 }, context);
    expect(new TextDecoder().decode(first.poll.stdout)).toBe("a\nb");
    expect(new TextDecoder().decode(first.poll.stderr)).toBe("c");
    expect(first.poll.stdout.buffer).not.toBe(stdout.buffer);
    const second = takeRunPoll(first.rest, { raw: true, cap: 8 }, context);
    expect(second.poll.done).toBe(true);
    expect(second.rest.length).toBe(0);
  });
});
