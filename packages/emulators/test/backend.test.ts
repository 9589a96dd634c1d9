/**
 * The backend seam: machines are sandboxes of the chosen provider, labelled with the emulator run, and
 * `close()` destroys every one of them; bad backend names are refused with a clear error.
 */

import { SandboxError } from "@sbox/core/spec";
import { local } from "@sbox/provider-local";
import { describe, expect, test } from "vitest";
import { openBackend } from "../src/index.js";

describe("openBackend", () => {
  test("an unknown backend name is a Validation error naming the known ones", async () => {
    const error = await openBackend("kubernetes" as never, { vendor: "e2b" }).catch((e: unknown) => e);
    expect(SandboxError.isInstance(error)).toBe(true);
    expect((error as SandboxError).code).toBe("Validation");
    expect((error as SandboxError).message).toMatch(/"local" or "docker"/);
  });

  test("machines carry the run's labels; release and close destroy them; a closed backend refuses", async () => {
    const backend = await openBackend(local(), { vendor: "test-vendor" });
    expect(backend.name).toBe("local");
    expect(backend.labels["sbox-emulator"]).toBe("test-vendor");
    const [a, b] = await Promise.all([backend.create(), backend.create({ metadata: { own: "x" } })]);
    expect(backend.machines).toBe(2);
    expect((await b!.getInfo()).metadata).toMatchObject({ own: "x", ...backend.labels });
    await backend.release(a!);
    expect(backend.machines).toBe(1);
    await expect(a!.commands.run("true")).rejects.toThrow();
    await backend.close();
    expect(backend.machines).toBe(0);
    await expect(b!.commands.run("true")).rejects.toThrow();
    await expect(backend.create()).rejects.toMatchObject({ code: "InvalidState" });
    await backend.close();
  });
});
