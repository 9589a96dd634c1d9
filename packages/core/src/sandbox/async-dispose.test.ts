/**
 * `await using` (Symbol.asyncDispose) on a sandbox destroys it when its block ends, also when the block
 * throws; on a client it disposes the client.
 */
import { describe, expect, test } from "vitest";
import { shDriver } from "../../test/sh-driver.js";
import type { SandboxClient } from "../client/client-types.js";
import { createSandboxClient } from "../client/create-sandbox-client.js";
import { SandboxError } from "../errors/sandbox-error.js";

describe("await using", () => {
  test("a sandbox is destroyed when its block ends, and when the block throws", async () => {
    const provider = shDriver({ userland: "dash", lifecycle: true });
    const client = createSandboxClient({ provider });
    let id = "";
    {
      await using sandbox = await client.create();
      id = sandbox.id;
      expect((await sandbox.commands.run("echo inside")).stdout).toBe("inside\n");
    }
    const gone = await client.connect(id).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(SandboxError.isInstance(gone) && gone.code).toBe("NotFound");

    let second = "";
    await expect(
      (async () => {
        await using sandbox = await client.create();
        second = sandbox.id;
        throw new Error("the block failed");
      })(),
    ).rejects.toThrow("the block failed");
    const alsoGone = await client.connect(second).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(SandboxError.isInstance(alsoGone) && alsoGone.code).toBe("NotFound");
    await client.dispose();
    provider.cleanup();
  });

  test("a client is disposed when its block ends", async () => {
    const provider = shDriver({ userland: "dash" });
    let kept: Pick<SandboxClient, "create"> | undefined;
    {
      await using client = createSandboxClient({ provider });
      kept = client;
      expect(client.provider).toBe(provider.name);
    }
    const after = await kept!.create().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(SandboxError.isInstance(after) && after.code).toBe("InvalidState");
    provider.cleanup();
  });
});
