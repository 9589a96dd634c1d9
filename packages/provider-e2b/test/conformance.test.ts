/**
 * The conformance kit against the adapter through the E2B emulator of `@sbox/emulators`: once as
 * declared, once primitives-only (every emulatable driver method hidden, so the core's emulations run over
 * E2B's exec). Nothing is excluded: egress is enforced by the emulator's backend, exposed ports are
 * fetched through the emulator's sandbox proxy (its path form: `https://<port>-<id>.<domain>` would need
 * DNS and TLS for E2B's domain), and the secrets and deadline cases use the emulator's fault injection.
 */
import { runConformance } from "@sbox/conformance/vitest";
import { kitFaultHook } from "@sbox/emulators";
import { startE2BEmulator } from "@sbox/emulators/e2b";
import { afterAll } from "vitest";
import type { E2BProviderOptions } from "../src/index.js";
import { TEST_API_KEY, testEmulatorOptions, testProvider } from "./e2b-test-env.js";

const emulator = await startE2BEmulator(testEmulatorOptions());
afterAll(() => emulator.close());

/** The deadline the provider is made with; the deadline case holds every call to it. */
const DEADLINE_MS = 8_000;
const providerWithOptions = (extra: Record<string, unknown> = {}) =>
  testProvider(emulator, {
    previewUrl: ({ sandboxId, port }) => emulator.portUrl(sandboxId, port),
    requestTimeoutMs: DEADLINE_MS,
    ...(extra as E2BProviderOptions),
  });
const provider = () => providerWithOptions();
// The emulator's API key is a fake credential: the secrets cases check it never leaks.
const remote = {
  faults: kitFaultHook(emulator.faults),
  deadlineMs: DEADLINE_MS,
  plantedCredential: TEST_API_KEY,
};
const label = `e2b (emulator on ${emulator.backend})`;

runConformance({ provider, providerWithOptions, remote, label });
runConformance({ provider, providerWithOptions, remote, primitivesOnly: true, label });
