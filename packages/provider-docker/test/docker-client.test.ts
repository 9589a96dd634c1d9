import { createSandboxClient } from "@sbox/core";
import { afterAll, describe, expect, test } from "vitest";
import { docker } from "../src/index.js";
import {
  ENGINE,
  ensureTestImage,
  RUN_ID,
  RUN_LABEL,
  removeLeftovers,
  SKIP_NOTE,
  TEST_IMAGE,
} from "./docker-test-env.js";

const make = () => docker({ image: TEST_IMAGE, labels: { [RUN_LABEL]: RUN_ID } });

describe.skipIf(!ENGINE.ok)(`docker through createSandboxClient${SKIP_NOTE}`, () => {
  const client = createSandboxClient({ provider: make() });

  afterAll(async () => {
    await client.dispose();
    expect(await removeLeftovers()).toBe(0);
  });

  test("ids are docker:<container name>, accepted by connect from another client", async () => {
    ensureTestImage();
    const sandbox = await client.create({ metadata: { via: "client" } });
    try {
      expect(sandbox.id).toMatch(/^docker:sbox-[0-9a-f]{12}$/);
      expect(sandbox.capabilities.flags.previewModel).toBe("declaredPorts");
      const other = createSandboxClient({ provider: make() });
      const again = await other.connect(sandbox.id);
      const result = await again.commands.run(["sh", "-c", 'printf "%s" "$1"', "sh", "it's ✓"]);
      expect(result).toMatchObject({ stdout: "it's ✓", exitCode: 0 });
      await again.files.write("/workspace/from-client.txt", "hello");
      expect(await sandbox.files.readText("/workspace/from-client.txt")).toBe("hello");
      expect((await sandbox.getInfo()).metadata).toMatchObject({ via: "client" });
      await other.dispose();
    } finally {
      await sandbox.destroy();
    }
  });

  test("an unsupported capability is refused before any engine call; allow-lists are Validation", async () => {
    const sandbox = await client.create();
    try {
      expect(sandbox.code).toBeUndefined();
      // @ts-expect-error resources.diskMB is not a field Docker honours: refused at compile time, and at runtime
      await expect(client.create({ resources: { diskMB: 100 } })).rejects.toMatchObject({
        code: "Validation",
      });
      await expect(client.create({ network: { egress: { allow: ["10.0.0.1"] } } })).rejects.toMatchObject({
        code: "Validation",
      });
    } finally {
      await sandbox.destroy();
    }
  });

  test("reap() stops sandboxes whose setTimeout passed, from another client", async () => {
    const sandbox = await client.create({ metadata: { reap: RUN_ID } });
    try {
      await sandbox.setTimeout(1);
      await new Promise((r) => setTimeout(r, 20));
      const reaper = createSandboxClient({ provider: make() });
      const reaped = await reaper.reap();
      expect(reaped.map((i) => i.id)).toContain(sandbox.id);
      expect((await sandbox.getInfo()).state).toBe("stopped");
      await reaper.dispose();
    } finally {
      await sandbox.destroy();
    }
  });
});
