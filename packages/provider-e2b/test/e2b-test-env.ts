/**
 * Shared set-up of the tests: the E2B emulator of `@sbox/emulators` (every sandbox a real sandbox of
 * provider-local, laid out as E2B's base template) and providers pointed at it.
 */
import { type E2BEmulator, type E2BEmulatorOptions, startE2BEmulator } from "@sbox/emulators/e2b";
import { type E2BProvider, type E2BProviderOptions, e2b } from "../src/index.js";

/** The API key the emulator accepts in these tests (not a real key). */
export const TEST_API_KEY = "e2b_test_key_0123456789abcdef0123456789";

/** The domain sandbox hosts are named under in tests. */
export const TEST_DOMAIN = "e2b.test";

/** The emulator and a provider factory pointed at it. */
export interface E2BTestEnv {
  readonly emulator: E2BEmulator;
  provider(options?: E2BProviderOptions): E2BProvider;
  /** Route names (`POST /v2/sandboxes`, `rpc process.Process/Start`...) the emulator answered so far. */
  routes(): Set<string>;
}

/** Options of the emulator every test file starts. */
export function testEmulatorOptions(options: E2BEmulatorOptions = {}): E2BEmulatorOptions {
  return {
    apiKey: TEST_API_KEY,
    domain: TEST_DOMAIN,
    templates: ["other"],
    // SBOX_EMULATOR_BACKEND=docker runs the sandboxes as containers instead of provider-local sandboxes.
    ...(process.env.SBOX_EMULATOR_BACKEND === "docker" ? { backend: "docker" as const } : {}),
    ...options,
  };
}

/** A provider talking to `emulator` with the test key; `options` win. */
export function testProvider(emulator: E2BEmulator, options: E2BProviderOptions = {}): E2BProvider {
  return e2b({
    apiKey: TEST_API_KEY,
    apiUrl: emulator.url,
    sandboxUrl: emulator.sandboxUrl,
    domain: emulator.domain,
    timeoutMs: 30 * 60_000,
    ...options,
  });
}

/** Starts an emulator and returns a provider factory pointed at it. */
export async function startTestEnv(options: E2BEmulatorOptions = {}): Promise<E2BTestEnv> {
  const emulator = await startE2BEmulator(testEmulatorOptions(options));
  return {
    emulator,
    provider: (overrides) => testProvider(emulator, overrides),
    routes: () => new Set(emulator.log.flatMap((entry) => (entry.route === undefined ? [] : [entry.route]))),
  };
}
