import { describe, expect, test } from "vitest";
import { SandboxError } from "../errors/sandbox-error.js";
import { withTimeout } from "./e7-timeout.js";

const aborted = (signal: AbortSignal): Promise<unknown> =>
  new Promise((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    signal.addEventListener("abort", () => resolve(signal.reason), { once: true });
  });

describe("E7 withTimeout", () => {
  test("aborts with a Timeout SandboxError after the deadline", async () => {
    const started = Date.now();
    const { signal, dispose } = withTimeout(undefined, 50, "command");
    const reason = await aborted(signal);
    dispose();
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    expect(SandboxError.isInstance(reason)).toBe(true);
    expect(reason).toMatchObject({ code: "Timeout", message: expect.stringContaining("50 ms") });
  });

  test("aborts with Aborted when the parent aborts first, keeping the parent's reason as cause", async () => {
    const parent = new AbortController();
    const { signal, dispose } = withTimeout(parent.signal, 60_000, "command");
    const why = new Error("user pressed stop");
    parent.abort(why);
    const reason = await aborted(signal);
    dispose();
    expect(reason).toMatchObject({ code: "Aborted", cause: why });
  });

  test("a parent that aborted with a SandboxError passes it on (an outer timeout stays a Timeout)", async () => {
    const outer = withTimeout(undefined, 20, "outer");
    const inner = withTimeout(outer.signal, 60_000, "inner");
    const reason = await aborted(inner.signal);
    expect(reason).toMatchObject({ code: "Timeout", message: expect.stringContaining("outer") });
    outer.dispose();
    inner.dispose();
  });

  test("an already aborted parent gives an aborted signal at once", () => {
    const parent = new AbortController();
    parent.abort();
    const { signal } = withTimeout(parent.signal, 1000, "command");
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toMatchObject({ code: "Aborted" });
  });

  test("dispose stops the timer and detaches from the parent", async () => {
    const parent = new AbortController();
    const { signal, dispose } = withTimeout(parent.signal, 30, "command");
    dispose();
    parent.abort();
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(signal.aborted).toBe(false);
  });

  test("no timeout and no parent: a signal that never fires", async () => {
    const { signal, dispose } = withTimeout(undefined, undefined, "command");
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(signal.aborted).toBe(false);
    dispose();
  });

  test("timeoutMs must be a finite number greater than 0", () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, "100" as unknown as number]) {
      expect(() => withTimeout(undefined, bad, "command")).toThrow(
        expect.objectContaining({ code: "Validation" }),
      );
    }
  });
});
