/**
 * The whole kit against a provider whose exec reports no exit code and which cannot stream: the one
 * configuration in this repository where the core's exit-code marker (E2) parses raw user output.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { runConformance } from "../src/vitest.js";
import { outputOnlyExec } from "./fixtures/output-only-exec.js";

const root = mkdtempSync(join(tmpdir(), "sbox-conformance-output-only-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

runConformance({
  provider: () => outputOnlyExec(root),
  providerWithOptions: (extra) => outputOnlyExec(root, extra),
  label: "minimal-sh (output-only exec)",
});
