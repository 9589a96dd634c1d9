/**
 * Start-up waits under load: the bound of a sandbox's start (bubblewrap naming its init, the holder's sleep
 * running, another program's lock) was a fixed 10 s, which a CI machine at a load of 40 on 2 cores misses.
 * It now grows with the host's load, and `local({ startTimeoutMs })` fixes it; a start that misses it ends
 * with a `Timeout` that says what was waited for and how to raise the bound, and leaves nothing running.
 */
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { local } from "../src/index.js";
import {
  BASE_START_TIMEOUT_MS,
  MAX_START_TIMEOUT_MS,
  startBoundMs,
  waitFor,
} from "../src/local-start-wait.js";
import { call, processesWithMarker, providerFor, run, tempStateRoot } from "./helpers.js";

const state = tempStateRoot("start");
afterAll(() => state.cleanup());

describe("start-up waits", () => {
  it("the default bound grows with the load, within its limits; a configured one is kept", () => {
    const bound = startBoundMs();
    expect(bound).toBeGreaterThanOrEqual(BASE_START_TIMEOUT_MS);
    expect(bound).toBeLessThanOrEqual(MAX_START_TIMEOUT_MS);
    expect(startBoundMs(1234)).toBe(1234);
  });

  it("a wait past its bound is a Timeout naming what it waited for and the option", async () => {
    const started = Date.now();
    await expect(waitFor("something that never comes", 100, async () => undefined)).rejects.toMatchObject({
      code: "Timeout",
      message: expect.stringMatching(/something that never comes.*startTimeoutMs/),
    });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await waitFor("a value", 100, async () => 0)).toBe(0);
  });

  it("refuses a startTimeoutMs that is not a positive whole number", () => {
    for (const startTimeoutMs of [0, -5, 1.5, Number.NaN, "10" as unknown as number]) {
      expect(() => local({ startTimeoutMs })).toThrow(expect.objectContaining({ code: "Validation" }));
    }
  });

  it("a holder that misses the bound fails with Timeout, leaves nothing running, and starts with a bound it meets", async () => {
    const root = join(state.home, "tight");
    const tight = providerFor("bwrap", root, { startTimeoutMs: 1 });
    const sandbox = await tight.doCreate({}, call());
    await expect(run(tight, sandbox, "echo never")).rejects.toMatchObject({
      code: "Timeout",
      // Which wait misses a 1 ms bound first depends on the host (as an unprivileged user a probe may
      // come before the holder's namespaces): any of them, named, with the option.
      message: expect.stringMatching(/timed out after .* s waiting for .+; local\(\{ startTimeoutMs \}\)/),
    });
    // The holder's bubblewrap names the sandbox's directory in its arguments: none of it may be left.
    expect(await processesWithMarker(sandbox.native.dir)).toEqual([]);
    const patient = providerFor("bwrap", root);
    expect((await run(patient, sandbox, "echo started")).stdout).toBe("started\n");
    await patient.doDestroy(sandbox, call());
  }, 60_000);
});
