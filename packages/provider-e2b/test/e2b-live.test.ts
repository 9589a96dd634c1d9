/**
 * The conformance kit against real E2B. Runs only when E2B_API_KEY is set; otherwise the suite is reported
 * as skipped, with the variable named, and nothing falls back to the test server.
 */

import { runConformance } from "@sbox/conformance/vitest";
import { createSandboxClient } from "@sbox/core";
import { SandboxError } from "@sbox/core/spec";
import { describe, expect, test } from "vitest";
import { e2b } from "../src/index.js";

const KEY = process.env.E2B_API_KEY;
const TEMPLATE = process.env.E2B_TEMPLATE;
const providerWithOptions = (extra: Record<string, unknown> = {}) =>
  e2b({ timeoutMs: 30 * 60_000, ...(TEMPLATE ? { template: TEMPLATE } : {}), ...extra });
const provider = () => providerWithOptions();

if (KEY) runConformance({ provider, providerWithOptions, timeoutMs: 120_000 });

describe.skipIf(!KEY)("e2b live (skipped: set E2B_API_KEY to run against real E2B)", () => {
  test("a wrong key is refused by E2B with Unauthorized naming E2B_API_KEY", async () => {
    const wrong = "e2b_0000000000000000000000000000000000000000";
    const error = await createSandboxClient({ provider: e2b({ apiKey: wrong }) })
      .create()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(SandboxError.isInstance(error)).toBe(true);
    expect((error as SandboxError).code).toBe("Unauthorized");
    expect((error as SandboxError).message).toContain("E2B_API_KEY");
    expect((error as SandboxError).message).not.toContain(wrong);
  });
});
