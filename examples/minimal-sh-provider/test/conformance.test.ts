import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runConformance } from "@sbox/conformance/vitest";
import { afterAll } from "vitest";
import { minimalShProvider } from "../src/index.js";

const root = mkdtempSync(join(tmpdir(), "sbox-minimal-sh-conformance-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const providerWithOptions = (extra: Record<string, unknown>) => minimalShProvider({ root, ...extra });
runConformance({
  provider: () => minimalShProvider({ root }),
  providerWithOptions,
  label: "minimal-sh (example)",
});
// The same cases with every emulatable driver method hidden: the core's exit-code marker (E2) runs too.
runConformance({
  provider: () => minimalShProvider({ root }),
  providerWithOptions,
  primitivesOnly: true,
  label: "minimal-sh (example)",
});
