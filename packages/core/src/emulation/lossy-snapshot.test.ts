import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { USERLANDS } from "../../test/sh-driver.js";
import { SandboxError } from "../errors/sandbox-error.js";
import type { DriverSandbox } from "../spec/provider-spec.js";
import { createTestBed, type TestBed } from "./e5-test-context.js";
import { emulatedSnapshots } from "./lossy-snapshot.js";

const call = () => ({ signal: AbortSignal.timeout(60_000) });
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** Everything observable about the workdir's files: names, types, link targets and content hashes. */
const MANIFEST = `find . ! -name . ! -path './.sbox*' | sort; find . -type f ! -path './.sbox*' -exec sha256sum {} + | sort; \
find . -type l -exec readlink {} + | sort`;

describe.each(USERLANDS)("lossy snapshots over %s", (userland) => {
  let bed: TestBed;
  let snapshots: ReturnType<typeof emulatedSnapshots>;

  beforeAll(async () => {
    bed = await createTestBed({ userland });
    snapshots = emulatedSnapshots(
      bed.ctx,
      async (sandbox) => (sandbox as DriverSandbox<{ root: string }>).native.root,
    );
  });
  afterAll(() => bed.cleanup());

  const manifest = async () => {
    const r = await bed.sh(MANIFEST);
    expect(r.exitCode).toBe(0);
    return text(r.stdout);
  };

  it("creates, lists, restores and deletes, bringing the workdir back exactly", async () => {
    await bed.sh(`mkdir -p src/deep empty && printf 'v1' > src/deep/a.txt && head -c 3000 /dev/urandom > blob \
&& printf hidden > .env && ln -s src/deep/a.txt link && printf nl > 'new
line' && chmod 750 blob`);
    const before = await manifest();
    const ref = await snapshots.doCreateSnapshot(bed.sandbox, { ...call(), name: "first ✓ 'quoted'" });
    expect(ref.id).toMatch(/^snap-/);
    expect(ref.name).toBe("first ✓ 'quoted'");
    expect(ref.createdAt).toBeInstanceOf(Date);

    await bed.sh(`printf v2 > src/deep/a.txt && rm -r empty blob && printf new > added && rm link`);
    expect(await manifest()).not.toBe(before);

    const listed = await snapshots.doListSnapshots(bed.sandbox, call());
    expect(listed).toEqual([{ id: ref.id, name: ref.name, createdAt: ref.createdAt }]);

    await snapshots.doRestoreSnapshot(bed.sandbox, ref, call());
    expect(await manifest()).toBe(before);
    expect(text((await bed.sh("cat src/deep/a.txt; stat -c %a blob")).stdout)).toBe("v1750\n");

    const second = await snapshots.doCreateSnapshot(bed.sandbox, call());
    expect(second.name).toBeUndefined();
    expect((await snapshots.doListSnapshots(bed.sandbox, call())).map((s) => s.id)).toEqual([
      ref.id,
      second.id,
    ]);

    await snapshots.doDeleteSnapshot(bed.sandbox, ref, call());
    expect((await snapshots.doListSnapshots(bed.sandbox, call())).map((s) => s.id)).toEqual([second.id]);
    await expect(snapshots.doRestoreSnapshot(bed.sandbox, ref, call())).rejects.toMatchObject({
      code: "NotFound",
    });
    await expect(snapshots.doDeleteSnapshot(bed.sandbox, ref, call())).rejects.toMatchObject({
      code: "NotFound",
    });
    await snapshots.doDeleteSnapshot(bed.sandbox, second, call());
  });

  it("answers NotFound for refs it never made, without touching the shell", async () => {
    for (const id of ["bogus", "../../etc/passwd", "snap-zz-00'; rm -rf /"]) {
      const ref = { id, createdAt: new Date() };
      const error = await snapshots.doRestoreSnapshot(bed.sandbox, ref, call()).catch((e: unknown) => e);
      expect(SandboxError.isInstance(error) && error.code).toBe("NotFound");
    }
    await expect(
      snapshots.doRestoreSnapshot(bed.sandbox, { id: "snap-abc-0123", createdAt: new Date() }, call()),
    ).rejects.toMatchObject({ code: "NotFound" });
  });

  it("snapshots an empty workdir and restores it to empty", async () => {
    const empty = await bed.sibling();
    const ref = await snapshots.doCreateSnapshot(empty, call());
    await bed.provider.doExec(empty, { command: { shell: "printf x > later && mkdir d" }, ...call() });
    await snapshots.doRestoreSnapshot(empty, ref, call());
    const listing = await bed.provider.doExec(empty, { command: { shell: "ls -A" }, ...call() });
    // The sh driver keeps a tmp/ directory in every sandbox; it was there when the snapshot was taken.
    expect(String(listing.stdout).trim()).toBe("tmp");
  });

  it("leaves out a state directory inside the workdir, and keeps it across restore", async () => {
    const inside = emulatedSnapshots(
      { ...bed.ctx, stateDir: `${bed.root}/.sbox` },
      async (sandbox) => (sandbox as DriverSandbox<{ root: string }>).native.root,
    );
    const ref = await inside.doCreateSnapshot(bed.sandbox, call());
    const archived = await bed.sh(`tar -tf .sbox/snapshots/${ref.id}.tar`);
    expect(archived.exitCode).toBe(0);
    expect(text(archived.stdout)).not.toContain(".sbox");
    await inside.doRestoreSnapshot(bed.sandbox, ref, call());
    expect((await inside.doListSnapshots(bed.sandbox, call())).map((s) => s.id)).toEqual([ref.id]);
  });

  it("refuses / as workdir and a name that is not a string", async () => {
    const rooted = emulatedSnapshots(bed.ctx, async () => "/");
    await expect(rooted.doCreateSnapshot(bed.sandbox, call())).rejects.toMatchObject({ code: "Validation" });
    await expect(
      snapshots.doCreateSnapshot(bed.sandbox, { ...call(), name: 42 as unknown as string }),
    ).rejects.toMatchObject({ code: "Validation" });
  });
});
