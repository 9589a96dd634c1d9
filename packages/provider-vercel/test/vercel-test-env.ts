/**
 * Shared set-up of the tests: the Vercel Sandbox emulator of `@sbox/emulators` (every session a real
 * sandbox of provider-local, or of Docker with SBOX_EMULATOR_BACKEND=docker) and providers pointed at it.
 */
import { startVercelEmulator, type VercelEmulator, type VercelEmulatorOptions } from "@sbox/emulators/vercel";
import { type VercelProvider, type VercelProviderOptions, vercel } from "../src/index.js";

/** The access token the emulator accepts in these tests (not a real token). */
export const TEST_TOKEN = "vcp_test_token_0123456789abcdef0123456789";

/** Options of the emulator every test file starts. */
export function testEmulatorOptions(options: VercelEmulatorOptions = {}): VercelEmulatorOptions {
  return {
    accessToken: TEST_TOKEN,
    ...(process.env.SBOX_EMULATOR_BACKEND === "docker" ? { backend: "docker" as const } : {}),
    ...options,
  };
}

/** A provider talking to `emulator` with the test token; `options` win. */
export function testProvider(emulator: VercelEmulator, options: VercelProviderOptions = {}): VercelProvider {
  return vercel({
    token: emulator.token,
    teamId: emulator.teamId,
    projectId: emulator.projectId,
    apiUrl: emulator.url,
    ...options,
  });
}

/** Starts an emulator. */
export function startTestEmulator(options: VercelEmulatorOptions = {}): Promise<VercelEmulator> {
  return startVercelEmulator(testEmulatorOptions(options));
}
