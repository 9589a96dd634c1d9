/** The README's capability table is the declaration, row for row: docs that drift from the code fail here. */
import { readFileSync } from "node:fs";
import { CAPABILITY_NAMES } from "@sbox/core/spec";
import { expect, test } from "vitest";
import { daytonaCapabilities } from "../src/index.js";

test("the README capability table lists every capability with its declared level", () => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const rows = new Map<string, string>();
  for (const match of readme.matchAll(/^\| ([a-zA-Z]+) \| (native|emulated|unsupported) \|/gm)) {
    rows.set(match[1]!, match[2]!);
  }
  expect([...rows.keys()].sort()).toEqual([...CAPABILITY_NAMES].sort());
  for (const name of CAPABILITY_NAMES) expect(rows.get(name), name).toBe(daytonaCapabilities[name]);
});
