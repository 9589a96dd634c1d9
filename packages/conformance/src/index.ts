/**
 * `@sbox/conformance`: the cases every sbox provider is held to, selected by the provider's own capability
 * map, a plain runner that returns a JSON report, and (in `@sbox/conformance/vitest`) a one-line vitest
 * binding.
 */

export {
  ConformanceFailure,
  ConformanceSkip,
  check,
  expectBytes,
  expectEqual,
  expectRejects,
  expectResolves,
  expectSandboxError,
} from "./assertions.js";
export { defineConformanceCases } from "./cases/define-conformance-cases.js";
export type {
  ConformanceCase,
  ConformanceContext,
  ConformanceFixtures,
  ConformanceMode,
} from "./conformance-case.js";
export { CASE_LABEL, LEAK_CASE_ID, RUN_LABEL } from "./conformance-labels.js";
export type { ConformanceOptions } from "./conformance-options.js";
export type { CaseReport, CaseStatus, ConformanceReport } from "./conformance-report.js";
export type { ConformanceRun, PlannedCase } from "./conformance-run.js";
export { createConformanceRun } from "./conformance-run.js";
export type { DriverCall, DriverCallLog, DriverRecorder } from "./driver-recorder.js";
export { createDriverRecorder } from "./driver-recorder.js";
export type { FaultInjection, ForeignRequest, RemoteFault, RemoteUnderTest } from "./fault-injection.js";
export type { ForeignOrigin } from "./foreign-origin.js";
export { startForeignOrigin } from "./foreign-origin.js";
export type { HostServer } from "./host-server.js";
export { startHostServer } from "./host-server.js";
export type { HttpFaults } from "./http-faults.js";
export { createHttpFaults } from "./http-faults.js";
export { runConformanceReport } from "./run-conformance-report.js";
