import { SandboxError } from "@sbox/core/spec";
import { describe, expect, it } from "vitest";
import { assertLocalId, newLocalId } from "./local-ids.js";
import { sandboxPaths } from "./local-state.js";

describe("local ids", () => {
  it("are random, 20 characters of [a-z0-9], and always valid", () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newLocalId()));
    expect(ids.size).toBe(1000);
    for (const id of ids) {
      expect(id).toMatch(/^[a-z0-9]{20}$/);
      expect(assertLocalId(id)).toBe(id);
    }
  });

  it("refuse anything that could name another path, with a Validation error", () => {
    const hostile: unknown[] = [
      "",
      ".",
      "..",
      "../x",
      "/etc",
      "a/b",
      "a\\b",
      "x\0",
      "-x",
      "a".repeat(65),
      "É",
      42,
      null,
    ];
    for (const id of hostile) {
      let error: unknown;
      try {
        assertLocalId(id);
      } catch (e) {
        error = e;
      }
      expect(SandboxError.isInstance(error) && error.code, String(id)).toBe("Validation");
    }
  });

  it("give paths that are direct children of the root", () => {
    const paths = sandboxPaths("/state/root", "abc123");
    expect(paths.dir).toBe("/state/root/abc123");
    expect(paths.workspace).toBe("/state/root/abc123/workspace");
    expect(() => sandboxPaths("/state/root", "../escape")).toThrow(/invalid sandbox id/);
  });
});
