/**
 * Shared set-up of the tests: a Machines API test server and providers pointed at it. Retries are fast
 * here so that retry tests take milliseconds, not seconds.
 */
import type { FlyProviderOptions } from "../src/index.js";
import { fly } from "../src/index.js";
import type { FlyMachinesTestServer } from "./fly-machines-test-server.js";

/** A provider talking to `server` with its token and app; `overrides` win. */
export function testProvider(
  server: FlyMachinesTestServer,
  overrides: FlyProviderOptions = {},
): ReturnType<typeof fly> {
  return fly({
    apiToken: server.token,
    appName: server.app,
    apiBaseUrl: server.url,
    image: "registry-1.docker.io/library/alpine:3.20",
    retry: { retries: 3, baseDelayMs: 5, maxDelayMs: 20 },
    previewUrl: ({ app, port }) => server.proxyUrl(app, port),
    ...overrides,
  });
}
