/**
 * Shared set-up of the tests: the Daytona emulator of `@sbox/emulators` (every sandbox a real sandbox of
 * the backend) and providers pointed at it.
 */
import type { DaytonaEmulator, DaytonaEmulatorOptions } from "@sbox/emulators/daytona";
import { type DaytonaProvider, type DaytonaProviderOptions, daytona } from "../src/index.js";

/** The API key the emulator accepts in these tests (not a real key). */
export const TEST_API_KEY = "dtn_test_key_0123456789abcdef0123456789abcdef";

/** Options of the emulator every test file starts. */
export function testEmulatorOptions(options: DaytonaEmulatorOptions = {}): DaytonaEmulatorOptions {
  return {
    apiKey: TEST_API_KEY,
    // SBOX_EMULATOR_BACKEND=docker runs the sandboxes as containers instead of provider-local sandboxes.
    ...(process.env.SBOX_EMULATOR_BACKEND === "docker" ? { backend: "docker" as const } : {}),
    ...options,
  };
}

/** A provider talking to `emulator` with the test key; `options` win. */
export function testProvider(
  emulator: DaytonaEmulator,
  options: DaytonaProviderOptions = {},
): DaytonaProvider {
  return daytona({ apiKey: TEST_API_KEY, apiUrl: emulator.url, target: "us", ...options });
}
