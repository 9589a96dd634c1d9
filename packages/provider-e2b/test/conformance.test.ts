/**
 * The conformance kit against the adapter through the E2B emulator of `@sbox/emulators`: once as
 * declared, once primitives-only (every emulatable driver method hidden, so the core's emulations run over
 * E2B's exec). Nothing is excluded: egress is enforced by the emulator's backend, and exposed ports are
 * fetched through the emulator's sandbox proxy (its path form: `https://<port>-<id>.<domain>` would need
 * DNS and TLS for E2B's domain).
 */
import { runConformance } from "@sbox/conformance/vitest";
import { startE2BEmulator } from "@sbox/emulators/e2b";
import { afterAll } from "vitest";
import { testEmulatorOptions, testProvider } from "./e2b-test-env.js";

const emulator = await startE2BEmulator(testEmulatorOptions());
afterAll(() => emulator.close());

const provider = () =>
  testProvider(emulator, { previewUrl: ({ sandboxId, port }) => emulator.portUrl(sandboxId, port) });

runConformance({ provider, label: `e2b (emulator on ${emulator.backend})` });
runConformance({ provider, primitivesOnly: true, label: `e2b (emulator on ${emulator.backend})` });
