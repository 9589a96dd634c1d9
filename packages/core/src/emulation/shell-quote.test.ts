import { spawnSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { assertEnvKey, shellExports, shellQuote, shellQuoteArgv } from "./shell-quote.js";

const SHELLS = [
  ["dash", ["/usr/bin/dash", "-c"]],
  ["busybox", ["/usr/bin/busybox", "sh", "-c"]],
] as const;

/** Strings of any code points but NUL, biased towards shell metacharacters. */
const hostileString = fc.oneof(
  fc.string({ unit: "binary" }).map((s) => s.replace(/\0/g, "")),
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
        "\t",
        " ",
        "*",
        "?",
        "~",
        "#",
        "!",
        ";",
        "&",
        "|",
        "é",
        "✓",
        "😀",
        "-",
        "{",
        "}",
        "$",
      ),
      {
        maxLength: 30,
      },
    )
    .map((parts) => parts.join("")),
);

describe.each(SHELLS)("shell quoting round-trips through %s", (_name, shell) => {
  test("any NUL-free string survives shellQuote unchanged", () => {
    fc.assert(
      fc.property(fc.array(hostileString, { minLength: 1, maxLength: 8 }), (words) => {
        const script = `printf '%s\\0' ${words.map(shellQuote).join(" ")}`;
        const out = spawnSync(shell[0], [...shell.slice(1), script], { encoding: "utf8" });
        expect(out.status).toBe(0);
        expect(out.stdout.split("\0").slice(0, -1)).toEqual(words);
      }),
      { numRuns: 60 },
    );
  });

  test("argv quoting runs the program with exactly those words", () => {
    fc.assert(
      fc.property(fc.array(hostileString, { maxLength: 6 }), (words) => {
        const out = spawnSync(
          shell[0],
          [...shell.slice(1), shellQuoteArgv(["printf", "%s\\0", "start", ...words])],
          { encoding: "utf8" },
        );
        expect(out.stdout.split("\0").slice(0, -1)).toEqual(["start", ...words]);
      }),
      { numRuns: 40 },
    );
  });

  test("env values survive shellExports unchanged", () => {
    fc.assert(
      fc.property(hostileString, (value) => {
        const script = `${shellExports({ SBOX_VALUE: value })}printf '%s' "$SBOX_VALUE"`;
        const out = spawnSync(shell[0], [...shell.slice(1), script], { encoding: "utf8" });
        expect(out.stdout).toBe(value);
      }),
      { numRuns: 60 },
    );
  });
});

describe("env keys", () => {
  test("identifiers are accepted and everything else is a Validation error", () => {
    for (const key of ["A", "_x", "PATH", "a1_B2"]) expect(() => assertEnvKey(key)).not.toThrow();
    for (const key of ["", "1A", "A-B", "A B", "A=B", "$(x)", "ü", "A\nB"]) {
      expect(() => assertEnvKey(key)).toThrow(expect.objectContaining({ code: "Validation" }));
    }
    fc.assert(
      fc.property(fc.string(), (key) => {
        const valid = /^[A-Za-z_][A-Za-z0-9_]*$/.test(key);
        if (valid) expect(() => assertEnvKey(key)).not.toThrow();
        else expect(() => assertEnvKey(key)).toThrow();
      }),
    );
  });

  test("NUL cannot be quoted", () => {
    expect(() => shellQuote("a\0b")).toThrow(expect.objectContaining({ code: "Validation" }));
  });
});
