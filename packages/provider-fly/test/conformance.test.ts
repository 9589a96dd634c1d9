/**
 * The conformance kit through the protocol-faithful Machines API test server, as the provider declares
 * itself: the core emulates streaming, background processes, kill, stdin, files, watch and metrics over
 * Fly's buffered exec, on real shells. Then once more in primitives-only mode (no optional driver method
 * hidden changes nothing for exec, since Fly has none, but E2 exit-code markers run too).
 */
import { runConformance } from "@sbox/conformance/vitest";
import { afterAll, describe, expect, test } from "vitest";
import { startFlyMachinesTestServer } from "./fly-machines-test-server.js";
import { testProvider } from "./fly-test-env.js";

const server = await startFlyMachinesTestServer();
/** The deadline the provider is made with; the deadline case holds every call to it. */
const DEADLINE_MS = 5_000;
const provider = () => testProvider(server, { requestTimeoutMs: DEADLINE_MS });
const providerWithOptions = (extra: Record<string, unknown>) =>
  testProvider(server, { requestTimeoutMs: DEADLINE_MS, ...extra });
// The test server's token is a fake credential: the secrets cases check it never leaks. The server
// refuses any other bearer token with 401, which the Unauthorized case holds the adapter to.
const remote = {
  faults: server.faultInjection,
  deadlineMs: DEADLINE_MS,
  plantedCredential: server.token,
  wrongCredentialOptions: { apiToken: "fly-sbox-conformance-wrong-token" },
};

runConformance({
  provider,
  providerWithOptions,
  remote,
  fixtures: { region: "fra" },
  label: "fly (local test server)",
});
runConformance({
  provider,
  providerWithOptions,
  remote,
  fixtures: { region: "fra" },
  primitivesOnly: true,
  label: "fly (local test server)",
});

describe("fly conformance cleanup", () => {
  afterAll(async () => {
    await server.close();
  });
  test("no machine of this run is left on the test server", () => {
    expect(server.machineIds()).toEqual([]);
  });
});
