import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idsOf, makeSboxHome } from "./sbox-harness.js";

const here = dirname(fileURLToPath(import.meta.url));
const dockerPackage = resolve(here, "../node_modules/@sbox/provider-docker/dist/index.js");
const image = process.env.SBOX_DOCKER_TEST_IMAGE ?? "sbox-busybox:latest";
const engine = spawnSync("docker", ["image", "inspect", image], { timeout: 10_000 });
const ready = existsSync(dockerPackage) && engine.status === 0;
const why = !existsSync(dockerPackage)
  ? "@sbox/provider-docker is not built"
  : `no Docker Engine answering with image ${image} (scripts/start-dockerd.sh, scripts/build-busybox-image.sh)`;

if (!ready) {
  // Visible in the test output, so a skipped docker suite is never mistaken for a passed one.
  console.warn(`sbox CLI docker suite skipped: ${why}`);
  if (process.env.CI === "true" && existsSync(dockerPackage) && spawnSync("docker", ["info"]).status === 0) {
    throw new Error(`CI has a Docker Engine but the docker suite cannot run: ${why}`);
  }
}

// The engine is shared with other suites: everything here carries this run's own label, every listing is
// filtered by it, and the cleanup removes only what carries it.
const label = `sbox-cli-test=${randomUUID()}`;
const home = makeSboxHome({ SBOX_PROVIDER: "docker" }, label);
const scratch = mkdtempSync(join(tmpdir(), "sbox-cli-docker-"));
const ALL_BYTES = Buffer.from(Array.from({ length: 256 }, (_, index) => index));
let id = "";

afterAll(async () => {
  if (ready) await home.cleanup();
  else rmSync(home.dir, { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
});

describe.skipIf(!ready)(`sbox against provider-docker (${image})`, () => {
  beforeAll(async () => {
    const created = await home.run(["create", "-t", image, "-l", label]);
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
    id = created.stdout.trim();
    expect(id).toMatch(/^docker:\S+$/);
  });

  it("ls --json lists it by label", async () => {
    expect(idsOf(await home.run(["ls", "--json", "-l", label]))).toEqual([id]);
  });

  it("exec passes exit codes and stdin through", async () => {
    expect((await home.run(["exec", id, "--", "sh", "-c", "exit 42"])).code).toBe(42);
    const echoed = await home.run(["exec", id, "--", "cat"], { input: "piped ünï\n$(x)\n" });
    expect(echoed.code).toBe(0);
    expect(echoed.stdout).toBe("piped ünï\n$(x)\n");
  });

  it("the id's provider prefix picks the provider without --provider", async () => {
    const result = await home.run(["exec", id, "--", "echo", "prefixed"], {
      env: { SBOX_PROVIDER: "local" },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("prefixed\n");
  });

  it("cp copies a directory with binary files both ways", async () => {
    const source = join(scratch, "tree");
    mkdirSync(join(source, "deep"), { recursive: true });
    writeFileSync(join(source, "all-bytes.bin"), ALL_BYTES);
    writeFileSync(join(source, "deep", "name with spaces.txt"), "spaced\n");
    expect((await home.run(["cp", source, `${id}:/tmp/up`])).code).toBe(0);
    const listed = await home.run([
      "exec",
      id,
      "--",
      "sh",
      "-c",
      "od -An -tx1 /tmp/up/all-bytes.bin | tr -d ' \\n'",
    ]);
    expect(listed.stdout).toBe(ALL_BYTES.toString("hex"));
    const down = join(scratch, "down");
    const back = await home.run(["cp", `${id}:/tmp/up`, down]);
    expect(back.code).toBe(0);
    expect(readFileSync(join(down, "all-bytes.bin")).equals(ALL_BYTES)).toBe(true);
    expect(readFileSync(join(down, "deep", "name with spaces.txt"), "utf8")).toBe("spaced\n");
  });

  it("run destroys its container; rm removes the created one", async () => {
    const ran = await home.run(["run", "-t", image, "-l", label, "--", "sh", "-c", "echo in-docker; exit 5"]);
    expect(ran.code).toBe(5);
    expect(ran.stdout).toBe("in-docker\n");
    expect(idsOf(await home.run(["ls", "--json", "-l", label]))).toEqual([id]);
    expect((await home.run(["rm", id])).code).toBe(0);
    expect(idsOf(await home.run(["ls", "--json", "-l", label]))).toEqual([]);
  });
});
