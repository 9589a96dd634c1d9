/**
 * The conformance kit against real Fly Machines. Runs only when FLY_API_TOKEN and FLY_APP are set (an
 * existing app the token may create machines in; FLY_REGION optionally picks the region, and is then
 * also the region fixture). Without them the suite is reported as skipped, with the variables named:
 * it never falls back to the test server.
 *
 * Each machine is created from the provider's default image (Alpine) unless FLY_IMAGE names another;
 * machines carry the run's label and are destroyed by the kit, which checks at the end that none is left.
 */
import { runConformance } from "@sbox/conformance/vitest";
import { describe, test } from "vitest";
import { fly } from "../src/index.js";

const token = process.env.FLY_API_TOKEN;
const app = process.env.FLY_APP;
const live = Boolean(token && app);

describe.skipIf(!live)("fly live conformance (needs FLY_API_TOKEN and FLY_APP)", () => {
  if (!live) {
    test("runs the conformance kit against real Fly Machines", () => {});
    return;
  }
  const region = process.env.FLY_REGION;
  const image = process.env.FLY_IMAGE;
  runConformance({
    provider: () => fly({ ...(region ? { region } : {}), ...(image ? { image } : {}) }),
    providerWithOptions: (extra) =>
      fly({ ...(region ? { region } : {}), ...(image ? { image } : {}), ...extra }),
    fixtures: region ? { region } : {},
    timeoutMs: 180_000,
  });
});
