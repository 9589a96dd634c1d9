/**
 * The conformance kit against the adapter through the Vercel Sandbox emulator of `@sbox/emulators`: once
 * as declared, once primitives-only (every emulatable driver method hidden, so the core's emulations run
 * over Vercel's commands). One case is excluded (below, with the reason); egress is enforced by the
 * emulator's backend, declared ports are fetched through the emulator's routes stand-in, and the secrets and deadline cases use the
 * emulator's fault injection.
 */
import { runConformance } from "@sbox/conformance/vitest";
import { kitFaultHook } from "@sbox/emulators";
import { afterAll } from "vitest";
import type { VercelProviderOptions } from "../src/index.js";
import { startTestEmulator, TEST_TOKEN, testProvider } from "./vercel-test-env.js";

// The kit's egress cases call a server of its own on the host's loopback; provider-local keeps the host's
// loopback out of its sandboxes unless asked (as provider-local's own conformance run asks).
const emulator = await startTestEmulator(
  process.env.SBOX_EMULATOR_BACKEND === "docker"
    ? {}
    : { backend: { name: "local", options: { network: { hostLoopback: true } } } },
);
afterAll(() => emulator.close());

/** The deadline the provider is made with; the deadline case holds every call to it. */
const DEADLINE_MS = 8_000;
/**
 * Sessions live 10 minutes (Vercel's default is 5): the kit's shared sandbox serves cases for longer than
 * 5 minutes, and an expired session comes back (the SDK resumes it) without its /tmp. The set-timeout case
 * asks for 10 minutes from a later moment, which Vercel can grant (an extension).
 */
const SESSION_TIMEOUT_MS = 10 * 60_000;
const providerWithOptions = (extra: Record<string, unknown> = {}) =>
  testProvider(emulator, {
    requestTimeoutMs: DEADLINE_MS,
    timeoutMs: SESSION_TIMEOUT_MS,
    ...(extra as VercelProviderOptions),
  });
const provider = () => providerWithOptions();
// The emulator's token is a fake credential: the secrets cases check it never leaks.
const remote = {
  faults: kitFaultHook(emulator.faults),
  deadlineMs: DEADLINE_MS,
  plantedCredential: TEST_TOKEN,
  // The emulator refuses any other credential with 401, which the Unauthorized case holds the adapter to.
  wrongCredentialOptions: { token: "vcp_sbox_conformance_wrong_token_0000000000" },
};
const label = `vercel (emulator on ${emulator.backend})`;

/**
 * What Vercel itself rules out. The case shortens a running sandbox's time (setTimeout(2000) on a session
 * of 10 minutes); Vercel can only extend a session, so the provider refuses it with Validation rather than
 * pretend.
 */
const exclude: Readonly<Record<string, string>> = {
  "lifecycle.set-timeout.enforced":
    "Vercel can only extend a running session's timeout: setTimeout(2000) on a 10-minute session is refused with Validation, not shortened",
};

runConformance({ provider, providerWithOptions, remote, exclude, label });
runConformance({ provider, providerWithOptions, remote, exclude, primitivesOnly: true, label });
