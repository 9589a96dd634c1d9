import { existsSync, mkdirSync } from "node:fs";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { hasBusybox } from "../../test/sh-driver.js";
import { argvScript } from "./argv-script.js";
import { applyEnvCwd, CWD_FAILED_EXIT_CODE } from "./e1-env-cwd.js";
import { createExecBed, EXEC_VARIANTS, type ExecBed, testSignal } from "./shell-exec-test-bed.js";
import { shellQuote } from "./shell-quote.js";

const decoder = new TextDecoder();

/** Any NUL-free string, biased towards shell metacharacters, quotes, newlines and unicode. */
const hostile = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }).map((s) => s.replace(/\0/g, "")),
  fc
    .array(
      fc.constantFrom(
        "'",
        '"',
        "`",
        "$(",
        ")",
        "\\",
        "\n",
        "\r",
        "\t",
        " ",
        "*",
        "$HOME",
        `\${x}`,
        "é",
        "😀",
        "-",
        "%s",
        "\x01",
        "\x7f",
      ),
      {
        maxLength: 20,
      },
    )
    .map((parts) => parts.join("")),
);

describe.skipIf(!hasBusybox()).each(EXEC_VARIANTS)("E1 on $userland (exit codes: $exitCodes)", (variant) => {
  let bed: ExecBed;
  beforeAll(async () => {
    // envCwd false: the driver ignores cwd/env, so E1 is the only way they can take effect.
    bed = await createExecBed({ ...variant, envCwd: false });
  });
  afterAll(async () => {
    await bed.cleanup();
  });
  const exec = (script: string, options: { cwd?: string; env?: Record<string, string> } = {}) =>
    bed.ctx.exec(bed.sandbox, script, { signal: testSignal(), ...options });

  test("any string round-trips through shellQuote and the shell: printf %s <quoted> prints it", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(hostile, { minLength: 1, maxLength: 6 }), async (words) => {
        const script = words.map((w) => `printf '%s\\n--\\n' ${shellQuote(w)}`).join("\n");
        const result = await exec(script);
        expect(decoder.decode(result.stdout)).toBe(words.map((w) => `${w}\n--\n`).join(""));
      }),
      { numRuns: 40 },
    );
  });

  test("any env value arrives byte for byte", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(hostile, { minLength: 1, maxLength: 5 }), async (values) => {
        const env = Object.fromEntries(values.map((v, i) => [`SBOX_V${i}`, v]));
        const script = values.map((_, i) => `printf '%s\\n--\\n' "$SBOX_V${i}"`).join("\n");
        const result = await exec(script, { env });
        expect(decoder.decode(result.stdout)).toBe(values.map((v) => `${v}\n--\n`).join(""));
      }),
      { numRuns: 40 },
    );
  });

  test("argv words are passed without shell interpretation", async () => {
    const words = ["it's", '"q"', "$(touch pwned)", "`touch pwned`", "a\nb", "ü ✓", "*", ""];
    const script = applyEnvCwd({ argv: ["printf", "[%s]", ...words] }, {});
    const result = await exec(script);
    expect(decoder.decode(result.stdout)).toBe(words.map((w) => `[${w}]`).join(""));
    expect(existsSync(`${bed.root}/pwned`)).toBe(false);
  });

  test("cwd, including a hostile directory name, is where the command runs", async () => {
    const name = "dir with 'quotes' \"and\" $(x) `y` ünï\nline";
    mkdirSync(`${bed.root}/${name}`, { recursive: true });
    const result = await exec('pwd; printf %s "$SBOX_E"', {
      cwd: `${bed.root}/${name}`,
      env: { SBOX_E: "v" },
    });
    expect(decoder.decode(result.stdout)).toBe(`${bed.root}/${name}\nv`);
  });

  test("a missing cwd fails the command instead of running it somewhere else", async () => {
    const result = await exec("touch created-by-command", { cwd: `${bed.root}/does-not-exist` });
    expect(result.exitCode).toBe(CWD_FAILED_EXIT_CODE);
    expect(decoder.decode(result.stderr)).toContain("does-not-exist");
    expect(existsSync(`${bed.root}/created-by-command`)).toBe(false);
    expect(existsSync(`${bed.root}/does-not-exist/created-by-command`)).toBe(false);
  });

  test("a cwd that is a file fails the same way", async () => {
    await exec("echo x > plain-file");
    const result = await exec("touch beside", { cwd: `${bed.root}/plain-file` });
    expect(result.exitCode).toBe(CWD_FAILED_EXIT_CODE);
    expect(existsSync(`${bed.root}/beside`)).toBe(false);
  });

  test("env keys that are not identifiers are rejected before anything runs", async () => {
    for (const key of ["", "1A", "A-B", "A B", "A=B", "$(touch pwned)", "ü", "A\nB", "A;touch pwned"]) {
      await expect(exec("touch ran", { env: { [key]: "v" } })).rejects.toMatchObject({ code: "Validation" });
    }
    await expect(exec("touch ran", { env: { OK: "a\0b" } })).rejects.toMatchObject({ code: "Validation" });
    await expect(exec("touch ran", { cwd: "" })).rejects.toMatchObject({ code: "Validation" });
    await expect(exec("touch ran", { cwd: "/tmp\0x" })).rejects.toMatchObject({ code: "Validation" });
    expect(existsSync(`${bed.root}/ran`)).toBe(false);
    expect(existsSync(`${bed.root}/pwned`)).toBe(false);
  });
});

describe("applyEnvCwd", () => {
  test("without cwd and env a snippet is returned as written, argv as the script that runs it", () => {
    expect(applyEnvCwd({ shell: "echo $HOME | wc -c" }, {})).toBe("echo $HOME | wc -c");
    expect(applyEnvCwd({ argv: ["ls", "a b"] }, { env: {} })).toBe(argvScript(["ls", "a b"]));
  });
});
