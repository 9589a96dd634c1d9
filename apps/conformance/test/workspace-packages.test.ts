import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { findRepoRoot, workspacePackages } from "../src/workspace-packages.js";

describe("workspacePackages", () => {
  it("finds the provider packages of this checkout with their ESM entry", () => {
    const root = findRepoRoot(dirname(fileURLToPath(import.meta.url)));
    const example = workspacePackages(root).find((p) => p.name === "@sbox/example-minimal-sh-provider");
    expect(example?.entry).toBe(`${root}/examples/minimal-sh-provider/dist/index.js`);
    expect(workspacePackages(root).some((p) => p.name === "@sbox/conformance-app")).toBe(false);
  });
});
