/**
 * The conformance kit through the Fly Machines emulator of `@sbox/emulators`, as the provider declares
 * itself: the core emulates streaming, background processes, kill, stdin, files, watch and metrics over
 * Fly's buffered exec, on real sandboxes of provider-local. Then once more in primitives-only mode.
 */
import { runConformance } from "@sbox/conformance/vitest";
import { kitFaultHook } from "@sbox/emulators";
import { afterAll, describe, expect, test } from "vitest";
import { startFlyTestServer, testProvider } from "./fly-test-env.js";

const server = await startFlyTestServer();
/** The deadline the provider is made with; the deadline case holds every call to it. */
const DEADLINE_MS = 5_000;
const provider = () => testProvider(server, { requestTimeoutMs: DEADLINE_MS });
const providerWithOptions = (extra: Record<string, unknown>) =>
  testProvider(server, { requestTimeoutMs: DEADLINE_MS, ...extra });
// The emulator's token is a fake credential: the secrets cases check it never leaks. The emulator
// refuses any other token with 401, which the Unauthorized case holds the adapter to.
const remote = {
  faults: kitFaultHook(server.emulator.faults),
  deadlineMs: DEADLINE_MS,
  plantedCredential: server.token,
  wrongCredentialOptions: { apiToken: "fly-sbox-conformance-wrong-token" },
};

runConformance({
  provider,
  providerWithOptions,
  remote,
  fixtures: { region: "fra" },
  label: "fly (emulator)",
});
runConformance({
  provider,
  providerWithOptions,
  remote,
  fixtures: { region: "fra" },
  primitivesOnly: true,
  label: "fly (emulator)",
});

describe("fly conformance cleanup", () => {
  afterAll(async () => {
    await server.close();
  });
  test("no machine of this run is left on the emulator", () => {
    expect(server.machineIds()).toEqual([]);
  });
});
