import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { USERLANDS } from "../../test/sh-driver.js";
import { createTestBed, type TestBed } from "./e5-test-context.js";
import { MAX_COMMAND_LINE_BYTES } from "./emulation-context.js";
import { emulatedCodeInterpreter } from "./lossy-code-interpreter.js";

const call = () => ({ signal: AbortSignal.timeout(60_000) });

describe("lossy code interpreter over dash (python3 and node on PATH)", () => {
  let bed: TestBed;
  let run: ReturnType<typeof emulatedCodeInterpreter>;

  beforeAll(async () => {
    bed = await createTestBed({ userland: "dash" });
    run = emulatedCodeInterpreter(bed.ctx);
  });
  afterAll(() => bed.cleanup());

  it("runs python by default: logs and the value of the last expression", async () => {
    const result = await run(
      bed.sandbox,
      `import sys\nprint("out ✓ $(x) \`y\` 'q'")\nprint("err", file=sys.stderr)\n6 * 7`,
      call(),
    );
    expect(result).toEqual({
      results: [{ "text/plain": "42" }],
      logs: { stdout: "out ✓ $(x) `y` 'q'\n", stderr: "err\n" },
    });
    expect((await run(bed.sandbox, "x = 5", call())).results).toEqual([]);
  });

  it("reports python exceptions with name, message and a traceback of the user's code", async () => {
    const result = await run(bed.sandbox, `def f():\n    raise ValueError("bad value")\nf()`, {
      ...call(),
      language: "python",
    });
    expect(result.error).toMatchObject({ name: "ValueError", message: "bad value" });
    expect(result.error?.traceback).toContain("line 2, in f");
    expect(result.error?.traceback).not.toContain("<string>");
    expect(result.logs.stderr).toContain("ValueError: bad value");
    expect((await run(bed.sandbox, "def (", call())).error?.name).toBe("SyntaxError");
    expect((await run(bed.sandbox, "import sys\nsys.exit(3)", call())).error).toMatchObject({
      name: "SystemExit",
      message: "3",
    });
  });

  it("keeps no state between runs", async () => {
    await run(bed.sandbox, "kept = 1", call());
    expect((await run(bed.sandbox, "kept", call())).error?.name).toBe("NameError");
  });

  it("runs javascript with require, reporting the completion value (awaited)", async () => {
    const result = await run(bed.sandbox, `console.log("hi");\nconst os = require("os");\n40 + 2`, {
      ...call(),
      language: "javascript",
    });
    expect(result).toEqual({ results: [{ "text/plain": "42" }], logs: { stdout: "hi\n", stderr: "" } });
    expect(
      (await run(bed.sandbox, "Promise.resolve({ a: 'x' })", { ...call(), language: "js" })).results,
    ).toEqual([{ "text/plain": "{ a: 'x' }" }]);
    expect((await run(bed.sandbox, "let y = 1;", { ...call(), language: "node" })).results).toEqual([]);
  });

  it("reports javascript errors, thrown now or later, and non-zero exits", async () => {
    const thrown = await run(bed.sandbox, `throw new TypeError("nope")`, { ...call(), language: "js" });
    expect(thrown.error).toMatchObject({ name: "TypeError", message: "nope" });
    expect(thrown.error?.traceback).toContain("TypeError: nope");
    const later = await run(bed.sandbox, `setTimeout(() => { throw new RangeError("later") }, 10); 1`, {
      ...call(),
      language: "js",
    });
    expect(later.error).toMatchObject({ name: "RangeError", message: "later" });
    const rejected = await run(bed.sandbox, `Promise.reject(new Error("async"))`, {
      ...call(),
      language: "js",
    });
    expect(rejected.error).toMatchObject({ name: "Error", message: "async" });
    const exited = await run(bed.sandbox, `console.error("bye"); process.exit(3)`, {
      ...call(),
      language: "js",
    });
    expect(exited.error).toMatchObject({ name: "ExitError" });
    expect(exited.logs.stderr).toBe("bye\n");
  });

  it("moves large code through a file, never a long command line", async () => {
    const big = `s = "${"x".repeat(200_000)}"\nlen(s)`;
    expect((await run(bed.sandbox, big, call())).results).toEqual([{ "text/plain": "200000" }]);
    expect(bed.provider.longestCommandBytes()).toBeLessThanOrEqual(MAX_COMMAND_LINE_BYTES);
  });

  it("refuses a context and unknown languages with NotSupported", async () => {
    await expect(run(bed.sandbox, "1", { ...call(), context: "ctx-1" })).rejects.toMatchObject({
      code: "NotSupported",
    });
    await expect(run(bed.sandbox, "1", { ...call(), language: "ruby" })).rejects.toMatchObject({
      code: "NotSupported",
    });
  });
});

describe.each(USERLANDS)("lossy code interpreter over %s without the runtime", (userland) => {
  let bed: TestBed;

  beforeAll(async () => {
    bed = await createTestBed({ userland });
  });
  afterAll(() => bed.cleanup());

  it("says NotSupported when python3 or node is not installed", async () => {
    // A context whose shell finds no command at all, as in a sandbox without the runtime.
    const run = emulatedCodeInterpreter({
      ...bed.ctx,
      exec: (sandbox, script, options) =>
        bed.ctx.exec(sandbox, `command() { return 1; }\n${script}`, options),
    });
    for (const language of ["python", "javascript"]) {
      await expect(run(bed.sandbox, "1", { ...call(), language })).rejects.toMatchObject({
        code: "NotSupported",
        message: expect.stringContaining("not installed"),
      });
    }
  });
});

describe("lossy code interpreter over busybox only", () => {
  let bed: TestBed;

  beforeAll(async () => {
    bed = await createTestBed({ userland: "busybox" });
  });
  afterAll(() => bed.cleanup());

  it("finds no python3 or node among the busybox applets", async () => {
    const run = emulatedCodeInterpreter(bed.ctx);
    await expect(run(bed.sandbox, "1", call())).rejects.toMatchObject({ code: "NotSupported" });
    await expect(run(bed.sandbox, "1", { ...call(), language: "js" })).rejects.toMatchObject({
      code: "NotSupported",
    });
  });
});
