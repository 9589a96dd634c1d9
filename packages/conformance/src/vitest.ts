/**
 * `@sbox/conformance/vitest`: registers the conformance cases with vitest, one `it` per case.
 *
 * ```ts
 * // test/conformance.test.ts
 * import { runConformance } from "@sbox/conformance/vitest";
 * import { myProvider } from "../src/index.js";
 *
 * runConformance({ provider: () => myProvider() });
 * ```
 */
import { afterAll, describe, it } from "vitest";
import type { ConformanceOptions } from "./conformance-options.js";
import { createConformanceRun } from "./conformance-run.js";

const DEFAULT_TIMEOUT_MS = 60_000;
/** Room for cleanup after a case's own time limit. */
const CLEANUP_MARGIN_MS = 75_000;

/**
 * Registers the whole kit as a vitest suite named after the provider and mode. Cases the provider's
 * capability map rules out appear as skipped with the reason in their name; excluded cases likewise,
 * marked `excluded`. The last test checks that no sandbox outlived the run.
 */
export function runConformance(options: ConformanceOptions): void {
  const run = createConformanceRun(options);
  describe(`@sbox/conformance: ${run.providerName} (${run.mode})`, () => {
    afterAll(async () => {
      await run.finish();
    }, CLEANUP_MARGIN_MS * 2);
    for (const planned of run.plan) {
      const { id } = planned.case;
      if (planned.status !== "run") {
        it.skip(`${id} — ${planned.status}: ${planned.reason ?? ""}`, () => {});
        continue;
      }
      const limit = Math.max(planned.case.timeoutMs ?? 0, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
      it(
        `${id}: ${planned.case.title}`,
        async (context) => {
          const report = await run.runCase(id);
          if (report.status === "failed") throw new Error(report.reason ?? `${id}: failed`);
          if (report.status === "skipped") context.skip(report.reason);
        },
        limit + CLEANUP_MARGIN_MS,
      );
    }
  });
}

export type { ConformanceOptions } from "./conformance-options.js";
