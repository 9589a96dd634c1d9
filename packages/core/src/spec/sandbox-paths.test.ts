import { posix } from "node:path";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { resolveSandboxPath } from "./sandbox-paths.js";

describe("resolveSandboxPath", () => {
  test("relative paths come from the working directory; the result is absolute and normalised", () => {
    expect(resolveSandboxPath("a/../b//c/", "/home/user")).toBe("/home/user/b/c");
    expect(resolveSandboxPath("/x/./y/", "/ignored")).toBe("/x/y");
    expect(resolveSandboxPath("../../..", "/a")).toBe("/");
    expect(resolveSandboxPath(".", "/w")).toBe("/w");
    expect(resolveSandboxPath("//")).toBe("/");
    expect(resolveSandboxPath("name with spaces/'q'", "/w")).toBe("/w/name with spaces/'q'");
  });

  test("empty paths and NUL bytes are Validation errors", () => {
    expect(() => resolveSandboxPath("")).toThrow(/non-empty/);
    expect(() => resolveSandboxPath("a\0b")).toThrow(/NUL/);
  });

  test("agrees with path.posix.resolve on any path", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom("a", "b", ".", "..", "", "c d", "é"), { maxLength: 8 }),
        fc.boolean(),
        (parts, absolute) => {
          const path = `${absolute ? "/" : ""}${parts.join("/")}` || ".";
          expect(resolveSandboxPath(path, "/work/dir")).toBe(posix.resolve("/work/dir", path));
        },
      ),
    );
  });
});
