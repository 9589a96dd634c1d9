import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeSboxHome } from "./sbox-harness.js";

const here = dirname(fileURLToPath(import.meta.url));
const project = mkdtempSync(join(tmpdir(), "sbox-cli-project-"));
const miniRoot = join(project, "mini-sandboxes");
const home = makeSboxHome({ MINI_ROOT: miniRoot });
const inProject = { cwd: project };

beforeAll(() => {
  // A user's project with a provider the CLI does not depend on: @sbox/provider-mini, and the same code
  // under a third-party name, @acme/sbox-mini. Both import the real @sbox/core.
  const fixture = join(here, "fixtures", "provider-mini");
  const modules = join(project, "node_modules");
  mkdirSync(join(modules, "@sbox"), { recursive: true });
  mkdirSync(join(modules, "@acme"), { recursive: true });
  mkdirSync(miniRoot);
  cpSync(fixture, join(modules, "@sbox", "provider-mini"), { recursive: true });
  cpSync(fixture, join(modules, "@acme", "sbox-mini"), { recursive: true });
  const acmeManifest = join(modules, "@acme", "sbox-mini", "package.json");
  writeFileSync(
    acmeManifest,
    readFileSync(acmeManifest, "utf8").replace("@sbox/provider-mini", "@acme/sbox-mini"),
  );
  symlinkSync(
    realpathSync(resolve(here, "../node_modules/@sbox/core")),
    join(modules, "@sbox", "core"),
    "dir",
  );
});

afterAll(async () => {
  await home.cleanup();
  rmSync(project, { recursive: true, force: true });
});

describe("a provider package installed in the user's project", () => {
  it("is found by caps, with its own declaration", async () => {
    const result = await home.run(["caps", "--json"], inProject);
    expect(result.code).toBe(0);
    const mini = (
      JSON.parse(result.stdout) as { name: string; status: string; capabilities: Record<string, string> }[]
    ).find((entry) => entry.name === "mini");
    expect(mini?.status).toBe("installed");
    expect(Object.values(mini?.capabilities ?? {}).every((level) => level === "unsupported")).toBe(true);
    // Outside that project it is not there.
    const elsewhere = await home.run(["caps", "--json"]);
    expect(elsewhere.stdout).not.toContain('"mini"');
  });

  it("runs sandboxes through the core's emulations, by name or by package name", async () => {
    for (const provider of ["mini", "@acme/sbox-mini"]) {
      const created = await home.run(["create", "-p", provider], inProject);
      expect(created.stderr).toBe("");
      const id = created.stdout.trim();
      expect(id).toMatch(/^mini:[a-z0-9]+$/);
      const ran = await home.run(
        ["exec", id, "--", "sh", "-c", "printf '%s' \"$1\"; exit 9", "sh", "ünï $(x)"],
        inProject,
      );
      expect(ran.stdout).toBe("ünï $(x)");
      expect(ran.code).toBe(9);
      // Files go through the core's exec-based emulation (E5): binary-safe both ways.
      const bytes = Buffer.from(Array.from({ length: 256 }, (_, index) => index));
      expect((await home.run(["cp", "-", `${id}:data.bin`], { ...inProject, input: bytes })).code).toBe(0);
      const back = await home.run(["cp", `${id}:data.bin`, "-"], inProject);
      expect(back.stdoutBytes.equals(bytes)).toBe(true);
      expect((await home.run(["rm", id], inProject)).code).toBe(0);
    }
  });

  it("missing capabilities are NotSupported (exit 6) with one clear line", async () => {
    const id = (await home.run(["create", "-p", "mini"], inProject)).stdout.trim();
    const cases: [string[], RegExp][] = [
      [["shell", id], /pty is not supported by provider mini: no interactive shell; use `sbox exec/],
      [["port", id, "8080"], /exposePort is not supported by provider mini/],
      [["ls", "-p", "mini"], /not supported/],
      [["exec", "-d", id, "--", "true"], /background is not supported/],
    ];
    for (const [args, message] of cases) {
      const result = await home.run(args, inProject);
      expect(result.code, args.join(" ")).toBe(6);
      expect(result.stderr.split("\n").filter(Boolean)).toHaveLength(1);
      expect(result.stderr).toMatch(/^error\[NotSupported\]: /);
      expect(result.stderr).toMatch(message);
    }
    // Piped input cannot reach a provider without stdin: an error, never silently dropped; empty input is fine.
    const piped = await home.run(["exec", id, "--", "cat"], { ...inProject, input: "data" });
    expect(piped.code).toBe(6);
    expect(piped.stderr).toMatch(
      /^error\[NotSupported\]: stdin is not supported by provider mini: 4 bytes were piped/,
    );
    const empty = await home.run(["exec", id, "--", "echo", "ok"], { ...inProject, input: "" });
    expect(empty.code).toBe(0);
    expect(empty.stdout).toBe("ok\n");
    expect(
      (await home.run(["exec", "--no-stdin", id, "--", "echo", "ok"], { ...inProject, input: "data" })).code,
    ).toBe(0);
    expect((await home.run(["rm", id], inProject)).code).toBe(0);
  });

  it("a spec field the provider does not honour is a Validation error, not dropped", async () => {
    const result = await home.run(["create", "-p", "mini", "--label", "a=b"], inProject);
    expect(result.code).toBe(7);
    expect(result.stderr).toMatch(/^error\[Validation\]: .*metadata/);
  });
});
