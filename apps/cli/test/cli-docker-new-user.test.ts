/**
 * What a new user tripped over on Docker (issue 20), through the real binary: a listing that survives one
 * slow container, a default image that can be configured and a failed pull that says what to do, flags
 * before the subcommand, and a missing program reported as a shell does.
 */
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSlowProxy } from "./docker-slow-proxy.js";
import { makeSboxHome } from "./sbox-harness.js";

const here = dirname(fileURLToPath(import.meta.url));
const dockerPackage = resolve(here, "../node_modules/@sbox/provider-docker/dist/index.js");
const image = process.env.SBOX_DOCKER_TEST_IMAGE ?? "sbox-busybox:latest";
const ready =
  existsSync(dockerPackage) &&
  spawnSync("docker", ["image", "inspect", image], { timeout: 10_000 }).status === 0;
if (!ready)
  console.warn(`sbox CLI docker new-user suite skipped: no Docker Engine with ${image}, or docker not built`);

// Everything this file creates carries its own label; cleanup removes only that.
const label = `sbox-cli-new-user=${randomUUID()}`;
const home = makeSboxHome({}, label);

function containerOf(id: string): { Id: string; Image: string; Config: { Image: string } } {
  const name = id.replace(/^docker:/, "");
  const inspected = spawnSync("docker", ["inspect", name], { encoding: "utf8", timeout: 15_000 });
  return (JSON.parse(inspected.stdout) as { Id: string; Image: string; Config: { Image: string } }[])[0]!;
}

afterAll(async () => {
  await home.run(["rm", "-p", "docker", "--all", "-l", label, "--yes", "--force"]);
  await home.cleanup();
});

describe.skipIf(!ready)(`sbox new-user paths on provider-docker (${image})`, () => {
  let slow = "";
  let quick = "";
  beforeAll(async () => {
    for (const which of ["slow", "quick"]) {
      // Flags before the subcommand (item 5): -p and -t given first.
      const created = await home.run([
        "-p",
        "docker",
        "-t",
        image,
        "create",
        "-l",
        label,
        "-l",
        `which=${which}`,
      ]);
      expect(created.stderr).toBe("");
      expect(created.code).toBe(0);
      if (which === "slow") slow = created.stdout.trim();
      else quick = created.stdout.trim();
    }
  });

  it("3. ls lists what answered when one container is slow, and says what did not", async () => {
    const slowId = containerOf(slow).Id;
    const proxy = await startSlowProxy({
      delayMs: 6_000,
      isSlow: (_method, path) => path.includes(`/containers/${slowId}/archive`),
    });
    try {
      const listed = await home.run([
        "ls",
        "-p",
        "docker",
        "-o",
        `host=${proxy.url}`,
        "-o",
        "requestTimeoutMs=1500",
        "--json",
        "-l",
        label,
      ]);
      expect(listed.code).toBe(5);
      const infos = JSON.parse(listed.stdout) as {
        id: string;
        partial?: { fields: string[]; code: string };
      }[];
      expect(infos.map((info) => info.id).sort()).toEqual([quick, slow].sort());
      expect(infos.find((info) => info.id === slow)?.partial).toMatchObject({
        fields: ["expiresAt"],
        code: "Timeout",
      });
      expect(infos.find((info) => info.id === quick)?.partial).toBeUndefined();
      const lines = listed.stderr.split("\n").filter(Boolean);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^error\\[Timeout\\]: ${slow}: expiresAt not read: `));
    } finally {
      await proxy.close();
    }
  });

  it("6. the default image comes from SBOX_DOCKER_IMAGE or the config file; doctor lists local images", async () => {
    const fromEnv = await home.run(["create", "-p", "docker", "-l", label], {
      env: { SBOX_DOCKER_IMAGE: image },
    });
    expect(fromEnv.stderr).toBe("");
    expect(containerOf(fromEnv.stdout.trim()).Config.Image).toBe(image);

    writeFileSync(
      join(home.dir, "config.json"),
      JSON.stringify({ provider: "docker", providers: { docker: { image } } }),
    );
    try {
      const fromConfig = await home.run(["create", "-l", label]);
      expect(fromConfig.stderr).toBe("");
      expect(fromConfig.stdout).toMatch(/^docker:/);
      expect(containerOf(fromConfig.stdout.trim()).Config.Image).toBe(image);
      const doctor = JSON.parse((await home.run(["doctor", "--json"])).stdout) as {
        providers: { name: string; checks: { name: string; ok: boolean; detail: string }[] }[];
      };
      const images = doctor.providers
        .find((provider) => provider.name === "docker")
        ?.checks.find((check) => check.name === "docker images");
      expect(images?.ok).toBe(true);
      expect(images?.detail).toContain(`default image ${image} (-o image / config.json) is on the engine`);
      expect(images?.detail).toMatch(new RegExp(`local images: .*${image.replace(/[.:]/g, "\\$&")}`));
    } finally {
      writeFileSync(join(home.dir, "config.json"), "{}");
    }
  });

  it("6. a pull that cannot work fails fast, in one line saying how to pick an image the engine has", async () => {
    const started = Date.now();
    const result = await home.run([
      "create",
      "-p",
      "docker",
      "-t",
      "127.0.0.1:9/sbox-no-such-image:1",
      "-l",
      label,
    ]);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(result.code).toBe(3);
    const lines = result.stderr.split("\n").filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /could not be pulled .*use an image the engine has \(spec\.template, the image option or SBOX_DOCKER_IMAGE\)/,
    );
  });

  it("17. a missing program says `NAME: command not found`, exit 127, not runc's words", async () => {
    const result = await home.run(["exec", quick, "nosuchcommand", "arg"]);
    expect([result.code, result.stderr]).toEqual([127, "nosuchcommand: command not found\n"]);
  });
});
