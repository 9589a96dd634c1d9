import { existsSync, readdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { USERLANDS } from "../../test/sh-driver.js";
import type { DriverSandbox } from "../spec/provider-spec.js";
import { emulatedFiles } from "./e5-files.js";
import { createTestBed, type TestBed } from "./e5-test-context.js";
import { emulatedFork } from "./lossy-fork.js";

type Sh = DriverSandbox<{ root: string }>;
const call = () => ({ signal: AbortSignal.timeout(60_000) });
const text = (b: Uint8Array | string) => (typeof b === "string" ? b : new TextDecoder().decode(b));
const workdir = async (sandbox: DriverSandbox) => (sandbox as Sh).native.root;

describe.each(USERLANDS)("lossy fork over %s", (userland) => {
  let bed: TestBed;
  const destroyed: string[] = [];
  const run = async (sandbox: DriverSandbox, script: string) =>
    text((await bed.provider.doExec(sandbox as Sh, { command: { shell: script }, ...call() })).stdout);
  const destroy = async (sandbox: DriverSandbox, signal: AbortSignal) => {
    destroyed.push(sandbox.id);
    await bed.provider.doDestroy(sandbox as Sh, { signal });
  };

  beforeAll(async () => {
    bed = await createTestBed({ userland });
    await bed.sh(`mkdir -p app/lib && printf 'state 1' > app/state.txt && head -c 200000 /dev/urandom > app/lib/blob \
&& ln -s state.txt app/current && printf x > '.hidden file'`);
  });
  afterAll(() => bed.cleanup());

  it("makes independent copies of the workdir in new sandboxes", async () => {
    const fork = emulatedFork(bed.ctx, workdir, () => bed.sibling(), emulatedFiles(bed.ctx), destroy);
    const copies = await fork(bed.sandbox, { ...call(), count: 2 });
    expect(copies).toHaveLength(2);
    const manifest =
      "cat app/state.txt '.hidden file'; sha256sum app/lib/blob | cut -d ' ' -f 1; readlink app/current";
    const original = await run(bed.sandbox, manifest);
    expect(original).toContain("state 1x");
    for (const copy of copies) {
      expect(copy.id).not.toBe(bed.sandbox.id);
      expect(await run(copy, manifest)).toBe(original);
    }
    await run(copies[0]!, "printf 'state 2' > app/state.txt && rm app/lib/blob");
    expect(await run(bed.sandbox, manifest)).toBe(original);
    expect(await run(copies[1]!, manifest)).toBe(original);
    expect(await run(copies[0]!, "cat app/state.txt")).toBe("state 2");
    // The transfer archives are gone from the state directory.
    expect(readdirSync(bed.ctx.stateDir).filter((f) => f.startsWith("fork-"))).toEqual([]);
  });

  it("works with the file methods left to the E5 fallback", async () => {
    const fork = emulatedFork(bed.ctx, workdir, () => bed.sibling(), {}, destroy);
    const [copy] = await fork(bed.sandbox, { ...call(), count: 1 });
    expect(await run(copy!, "cat app/state.txt")).toBe("state 1");
  });

  it("destroys the copies it made when a later step fails", async () => {
    let made = 0;
    const siblings: Sh[] = [];
    const fork = emulatedFork(
      bed.ctx,
      workdir,
      async () => {
        made++;
        if (made === 3) throw new Error("quota reached");
        const sibling = await bed.sibling();
        siblings.push(sibling);
        return sibling;
      },
      emulatedFiles(bed.ctx),
      destroy,
    );
    await expect(fork(bed.sandbox, { ...call(), count: 3 })).rejects.toMatchObject({
      code: "Provider",
      message: expect.stringContaining("quota reached"),
    });
    expect(siblings).toHaveLength(2);
    for (const sibling of siblings) {
      expect(destroyed).toContain(sibling.id);
      expect(existsSync(sibling.native.root)).toBe(false);
    }
    expect(readdirSync(bed.ctx.stateDir).filter((f) => f.startsWith("fork-"))).toEqual([]);
  });

  it("validates count", async () => {
    const fork = emulatedFork(bed.ctx, workdir, () => bed.sibling(), {}, destroy);
    for (const count of [0, -1, 1.5, 1000]) {
      await expect(fork(bed.sandbox, { ...call(), count })).rejects.toMatchObject({ code: "Validation" });
    }
  });
});
