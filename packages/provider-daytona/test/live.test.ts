/**
 * The conformance kit against real Daytona. Runs only when DAYTONA_API_KEY is set (DAYTONA_API_URL and
 * DAYTONA_TARGET optionally pick the endpoint and region, DAYTONA_SNAPSHOT the snapshot). Without the key
 * the suite is reported as skipped, with the variable named: it never falls back to the emulator.
 */
import { runConformance } from "@sbox/conformance/vitest";
import { describe, test } from "vitest";
import { daytona } from "../src/index.js";

const live = Boolean(process.env.DAYTONA_API_KEY);

describe.skipIf(!live)("daytona live conformance (needs DAYTONA_API_KEY)", () => {
  if (!live) {
    test("runs the conformance kit against real Daytona", () => {});
    return;
  }
  const snapshot = process.env.DAYTONA_SNAPSHOT;
  const options = snapshot ? { snapshot } : {};
  runConformance({
    provider: () => daytona(options),
    providerWithOptions: (extra) => daytona({ ...options, ...extra }),
    timeoutMs: 180_000,
  });
});
