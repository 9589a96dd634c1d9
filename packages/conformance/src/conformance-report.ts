import type { CapabilityFlags, CapabilityMap, CapabilityName } from "@sbox/core/spec";
import type { ConformanceMode } from "./conformance-case.js";

/** Outcome of one case. */
export type CaseStatus = "passed" | "failed" | "skipped" | "excluded";

/** One line of the report. */
export interface CaseReport {
  /** Stable dotted id. */
  id: string;
  /** The contract sentence. */
  title: string;
  /** Capabilities the case needs. */
  requires: CapabilityName[];
  /** For negative cases: the unsupported capability it checks. */
  unsupportedOf?: CapabilityName | undefined;
  /** True for a case that holds only the core, whatever the adapter does (counted apart). */
  coreOnly?: boolean | undefined;
  status: CaseStatus;
  /** Why it failed, was skipped or was excluded; failures start with the case id. */
  reason?: string | undefined;
  /** Wall time in milliseconds (0 when it did not run). */
  ms: number;
}

/** The JSON report of one run against one provider in one mode. */
export interface ConformanceReport {
  /** The provider's name. */
  provider: string;
  mode: ConformanceMode;
  /** The label value every sandbox of this run carried (`sbox-conformance-run`). */
  runId: string;
  /** ISO timestamp. */
  startedAt: string;
  durationMs: number;
  /** What the provider declares. */
  declared: CapabilityMap;
  /** What the client reports after emulation: what the cases were selected by. */
  effective: CapabilityMap;
  flags: CapabilityFlags;
  cases: CaseReport[];
  /**
   * How the cases were chosen: the run's `only` (absent when every case was selected), its `exclude`
   * entries, and the ids `only` left out, so a report never hides a case without saying so.
   */
  selection: {
    only?: string[] | undefined;
    exclude: Record<string, string>;
    notSelected: string[];
  };
  /** Sandboxes still alive after the run (ids); any entry fails the run. */
  leaked: string[];
  /**
   * Totals over `cases`. `coreOnly` counts the passed cases that hold only the core (they are among
   * `passed` too): `passed - coreOnly` is what the adapter's own code proved.
   */
  summary: { passed: number; failed: number; skipped: number; excluded: number; coreOnly: number };
}
