import { describe, expect, it } from "vitest";
import { BLOCK_END, BLOCK_START, replaceBlock } from "../src/readme-block.js";

describe("replaceBlock", () => {
  it("replaces only the text between the markers", () => {
    const doc = `# Title\n\n${BLOCK_START}\nold\nlines\n${BLOCK_END}\n\nafter\n`;
    expect(replaceBlock(doc, "new table\n")).toBe(
      `# Title\n\n${BLOCK_START}\nnew table\n${BLOCK_END}\n\nafter\n`,
    );
  });

  it("refuses a document without both markers in order", () => {
    expect(replaceBlock("no markers", "x")).toBeUndefined();
    expect(replaceBlock(`${BLOCK_END}\n${BLOCK_START}`, "x")).toBeUndefined();
  });
});
