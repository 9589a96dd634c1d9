import { SandboxError } from "@sbox/core/spec";
import { describe, expect, it } from "vitest";
import { createPastLatePause } from "./docker-late-pause.js";

const paused = () =>
  new SandboxError(
    "InvalidState",
    "docker exec create: Container x is paused, unpause the container before exec",
  );

describe("createPastLatePause", () => {
  it("tries a create refused as paused again, and returns once the engine takes it", async () => {
    let calls = 0;
    const created = await createPastLatePause(new AbortController().signal, async () => {
      calls++;
      if (calls < 3) throw paused();
      return "exec";
    });
    expect(created).toBe("exec");
    expect(calls).toBe(3);
  });

  it("gives the refusal once the window passed: a container that really is paused stays InvalidState", async () => {
    let calls = 0;
    const started = Date.now();
    const error = await createPastLatePause(
      new AbortController().signal,
      async () => {
        calls++;
        throw paused();
      },
      300,
    ).catch((e: unknown) => e);
    expect(SandboxError.isInstance(error) && error.code).toBe("InvalidState");
    expect(calls).toBeGreaterThan(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  it("passes any other failure on at once, and stops trying when the call is aborted", async () => {
    let calls = 0;
    const other = await createPastLatePause(new AbortController().signal, async () => {
      calls++;
      throw new SandboxError("NotFound", "docker exec create: no such container");
    }).catch((e: unknown) => e);
    expect(SandboxError.isInstance(other) && other.code).toBe("NotFound");
    expect(calls).toBe(1);
    const aborted = new AbortController();
    aborted.abort();
    calls = 0;
    await expect(
      createPastLatePause(aborted.signal, async () => {
        calls++;
        throw paused();
      }),
    ).rejects.toMatchObject({ code: "InvalidState" });
    expect(calls).toBe(1);
  });
});
