/**
 * The conformance kit through the Fly Machines emulator of `@sbox/emulators`, as the provider declares
 * itself: the core emulates streaming, background processes, kill, stdin, files, watch and metrics over
 * Fly's buffered exec, on real sandboxes of provider-local. Then once more in primitives-only mode.
 */
import { runConformance } from "@sbox/conformance/vitest";
import { afterAll, describe, expect, test } from "vitest";
import { startFlyTestServer, testProvider } from "./fly-test-env.js";

const server = await startFlyTestServer();
const provider = () => testProvider(server);

runConformance({ provider, fixtures: { region: "fra" }, label: "fly (emulator)" });
runConformance({
  provider,
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
