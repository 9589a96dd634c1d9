/** Shared setup of the tests that run the adapter against the local test server. */
import { type E2BProvider, type E2BProviderOptions, e2b } from "../src/index.js";
import { type E2BTestServer, startE2BTestServer } from "./e2b-envd-test-server.js";

/** The API key the test server accepts (not a real key). */
export const TEST_API_KEY = "e2b_test_key_0123456789abcdef0123456789";

/** The domain sandbox hosts are named under in tests. */
export const TEST_DOMAIN = "e2b.test";

/** Starts a test server and returns a provider factory pointed at it. */
export async function startTestEnv(): Promise<{
  server: E2BTestServer;
  provider: (options?: E2BProviderOptions) => E2BProvider;
}> {
  const server = await startE2BTestServer({ apiKey: TEST_API_KEY, templates: ["base", "other"] });
  const provider = (options: E2BProviderOptions = {}) =>
    e2b({
      apiKey: TEST_API_KEY,
      apiUrl: server.apiUrl,
      sandboxUrl: server.sandboxUrl,
      domain: TEST_DOMAIN,
      timeoutMs: 30 * 60_000,
      ...options,
    });
  return { server, provider };
}
