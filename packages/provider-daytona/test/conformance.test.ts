/**
 * The conformance kit against the adapter through the Daytona emulator of `@sbox/emulators`: once as
 * declared, once primitives-only (every emulatable driver method hidden, so the core's emulations run over
 * Daytona's session exec). The secrets and deadline cases use the emulator's fault injection.
 */
import { runConformance } from "@sbox/conformance/vitest";
import { kitFaultHook } from "@sbox/emulators";
import { startDaytonaEmulator } from "@sbox/emulators/daytona";
import { afterAll } from "vitest";
import type { DaytonaProviderOptions } from "../src/index.js";
import { TEST_API_KEY, testEmulatorOptions, testProvider } from "./daytona-test-env.js";

const emulator = await startDaytonaEmulator(testEmulatorOptions());
afterAll(() => emulator.close());

/**
 * The deadline the provider is made with; the deadline case holds every call to it. Every call must answer
 * within it, a command right after a boot on a loaded 2-core machine included (8 s was missed once with
 * the suites running side by side).
 */
const DEADLINE_MS = 15_000;
const providerWithOptions = (extra: Record<string, unknown> = {}) =>
  testProvider(emulator, { requestTimeoutMs: DEADLINE_MS, ...(extra as DaytonaProviderOptions) });
const provider = () => providerWithOptions();
// The emulator's API key is a fake credential: the secrets cases check it never leaks.
const remote = {
  faults: kitFaultHook(emulator.faults),
  deadlineMs: DEADLINE_MS,
  plantedCredential: TEST_API_KEY,
  // The emulator refuses any other credential with 401, which the Unauthorized case holds the adapter to.
  wrongCredentialOptions: { apiKey: "dtn_sbox_conformance_wrong_key" },
};
const label = `daytona (emulator on ${emulator.backend})`;

runConformance({ provider, providerWithOptions, remote, label });
runConformance({ provider, providerWithOptions, remote, primitivesOnly: true, label });
