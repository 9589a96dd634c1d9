/**
 * The conformance kit against the adapter through the local E2B test server: once as declared, once
 * primitives-only (every emulatable driver method hidden, so the core's emulations run over E2B's exec).
 * Excluded are only the cases the test server cannot stand for; they are verified live (see README).
 */
import { runConformance } from "@sbox/conformance/vitest";
import { afterAll } from "vitest";
import { e2b } from "../src/index.js";
import { type E2BTestServer, startE2BTestServer } from "./e2b-envd-test-server.js";
import { TEST_API_KEY, TEST_DOMAIN } from "./e2b-test-env.js";

const server: E2BTestServer = await startE2BTestServer({ apiKey: TEST_API_KEY });
afterAll(() => server.close());

/** The deadline the provider is made with; the deadline case holds every call to it. */
const DEADLINE_MS = 8_000;
const providerWithOptions = (extra: Record<string, unknown> = {}) =>
  e2b({
    apiKey: TEST_API_KEY,
    apiUrl: server.apiUrl,
    sandboxUrl: server.sandboxUrl,
    domain: TEST_DOMAIN,
    timeoutMs: 30 * 60_000,
    requestTimeoutMs: DEADLINE_MS,
    ...extra,
  });
const provider = () => providerWithOptions();
// The test server's API key is a fake credential: the secrets cases check it never leaks. The server
// refuses any other key with 401, which the Unauthorized case holds the adapter to.
const remote = {
  faults: server.faultInjection,
  deadlineMs: DEADLINE_MS,
  plantedCredential: TEST_API_KEY,
  wrongCredentialOptions: { apiKey: "e2b_sbox_conformance_wrong_key" },
};

/** Cases the local test server cannot faithfully stand for; each is verified live only. */
export const TEST_SERVER_EXCLUDES: Readonly<Record<string, string>> = {
  "ports.expose.http":
    "the URL is E2B's public HTTPS proxy (https://<port>-<id>.<domain>), which no local server can answer for",
  "network.egress.block-all": "the test server records egress rules but runs commands on the host network",
  "network.egress.at-create": "the test server records egress rules but runs commands on the host network",
  "network.egress.allow-list": "the test server records egress rules but runs commands on the host network",
};

runConformance({
  provider,
  providerWithOptions,
  remote,
  exclude: TEST_SERVER_EXCLUDES,
  label: "e2b (local test server)",
});
runConformance({
  provider,
  providerWithOptions,
  remote,
  exclude: TEST_SERVER_EXCLUDES,
  primitivesOnly: true,
  label: "e2b (local test server)",
});
