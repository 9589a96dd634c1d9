import { SandboxError } from "@sbox/core/spec";
import type { ConformanceCase } from "../conformance-case.js";
import { backgroundCases } from "./background-cases.js";
import { concurrencyCases } from "./concurrency-cases.js";
import { errorCases } from "./error-cases.js";
import { execCases } from "./exec-cases.js";
import { execEdgeCases } from "./exec-edge-cases.js";
import { extraCases } from "./extra-cases.js";
import { filesCases } from "./files-cases.js";
import { killCases } from "./kill-cases.js";
import { lifecycleCases } from "./lifecycle-cases.js";
import { lifecycleEffectCases } from "./lifecycle-effect-cases.js";
import { manifestCases } from "./manifest-cases.js";
import { metricsCases } from "./metrics-cases.js";
import { networkCases } from "./network-cases.js";
import { optionsCases } from "./options-cases.js";
import { portsCases } from "./ports-cases.js";
import { primitiveCases } from "./primitive-cases.js";
import { remoteFaultCases } from "./remote-fault-cases.js";
import { stateCases } from "./state-cases.js";
import { unsupportedCases } from "./unsupported-cases.js";
import { watchCases } from "./watch-cases.js";

/**
 * Every conformance case, in run order, followed by `ownCases` (a test file's `extraCases`). Runner-agnostic:
 * each case is `{ id, title, requires, run(ctx) }` with a stable dotted id; a binding (the plain report
 * runner, the vitest binding) selects cases by the provider's own effective capability map and runs them.
 * Two cases with one id are a `Validation` error: ids are the kit's public contract (exclude lists,
 * reports).
 */
export function defineConformanceCases(ownCases: readonly ConformanceCase[] = []): ConformanceCase[] {
  const cases = [
    ...manifestCases(),
    ...lifecycleCases(),
    ...lifecycleEffectCases(),
    ...primitiveCases(),
    ...execCases(),
    ...execEdgeCases(),
    ...killCases(),
    ...backgroundCases(),
    ...filesCases(),
    ...watchCases(),
    ...portsCases(),
    ...stateCases(),
    ...networkCases(),
    ...metricsCases(),
    ...extraCases(),
    ...concurrencyCases(),
    ...errorCases(),
    ...optionsCases(),
    ...remoteFaultCases(),
    ...unsupportedCases(),
    ...ownCases,
  ];
  const seen = new Set<string>();
  for (const c of cases) {
    if (seen.has(c.id))
      throw new SandboxError("Validation", `two conformance cases share the id ${c.id}`, {
        retryable: false,
      });
    seen.add(c.id);
  }
  return cases;
}
