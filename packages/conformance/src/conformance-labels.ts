/** Metadata key carrying the run id on every sandbox the kit creates. */
export const RUN_LABEL = "sbox-conformance-run";
/** Metadata key carrying the case id on every sandbox the kit creates. */
export const CASE_LABEL = "sbox-conformance-case";
/** Id of the final check that no sandbox outlived the run. */
export const LEAK_CASE_ID = "run.no-sandbox-left";
