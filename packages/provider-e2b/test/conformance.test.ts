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

// The kit's egress cases reach a server on this machine; provider-local opens the host's loopback to its
// sandboxes only when asked (closed by default), as provider-local's own conformance run does.
const emulator = await startE2BEmulator(
  testEmulatorOptions(
    process.env.SBOX_EMULATOR_BACKEND === "docker"
      ? {}
      : { backend: { name: "local", options: { network: { hostLoopback: true } } } },
  ),
);
afterAll(() => emulator.close());

/**
 * The deadline the provider is made with; the deadline case holds every call to it. Every call must answer
 * within it, sandbox creation on a loaded 2-core machine included (a backend sandbox boots in it).
 */
const DEADLINE_MS = 15_000;
const providerWithOptions = (extra: Record<string, unknown> = {}) =>
  testProvider(emulator, {
    previewUrl: ({ sandboxId, port }) => emulator.portUrl(sandboxId, port),
    requestTimeoutMs: DEADLINE_MS,
    ...(extra as E2BProviderOptions),
  });
const provider = () => providerWithOptions();
// The emulator's API key is a fake credential: the secrets cases check it never leaks. The emulator
// refuses any other key with 401, which the Unauthorized case holds the adapter to.
const remote = {
  faults: kitFaultHook(emulator.faults),
  deadlineMs: DEADLINE_MS,
  plantedCredential: TEST_API_KEY,
  wrongCredentialOptions: { apiKey: "e2b_sbox_conformance_wrong_key" },
};
const label = `e2b (emulator on ${emulator.backend})`;

runConformance({ provider, providerWithOptions, remote, label });
runConformance({ provider, providerWithOptions, remote, primitivesOnly: true, label });
