/**
 * The conformance kit against real Vercel Sandbox. Runs only with credentials: VERCEL_TOKEN with
 * VERCEL_TEAM_ID and VERCEL_PROJECT_ID, or VERCEL_OIDC_TOKEN (what `vercel env pull` writes). Without them
 * the suite is reported as skipped, with the variables named: it never falls back to the emulator.
 */
import { runConformance } from "@sbox/conformance/vitest";
import { describe, test } from "vitest";
import { vercel } from "../src/index.js";

const env = process.env;
const live = Boolean(
  (env.VERCEL_TOKEN && env.VERCEL_TEAM_ID && env.VERCEL_PROJECT_ID) || env.VERCEL_OIDC_TOKEN,
);

describe.skipIf(!live)(
  "vercel live conformance (needs VERCEL_TOKEN with VERCEL_TEAM_ID and VERCEL_PROJECT_ID, or VERCEL_OIDC_TOKEN)",
  () => {
    if (!live) {
      test("runs the conformance kit against real Vercel Sandbox", () => {});
      return;
    }
    runConformance({
      provider: () => vercel({ timeoutMs: 10 * 60_000 }),
      providerWithOptions: (extra) => vercel({ timeoutMs: 10 * 60_000, ...extra }),
      timeoutMs: 180_000,
    });
  },
);
