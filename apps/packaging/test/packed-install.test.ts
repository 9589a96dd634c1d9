/**
 * The packages as a user installs them: packed tarballs of core, provider-local and manager installed
 * with npm into a project outside the monorepo, with no registry at all. Nothing native is built; the
 * optional native modules are named, with the command to add them, when their one feature is used; and
 * CommonJS projects `require()` the packages as ESM projects import them.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InstallResult, installTarballs, packPackages, runInProject } from "../src/install-probe.js";

const tarballDir = mkdtempSync(join(tmpdir(), "sbox-packed-"));
const stateRoot = mkdtempSync(join(tmpdir(), "sbox-packed-state-"));
let tarballs: string[] = [];
const installs: InstallResult[] = [];
const projects: Partial<Record<"module" | "commonjs", string>> = {};

beforeAll(() => {
  tarballs = packPackages(["core", "provider-local", "manager"], tarballDir);
});
afterAll(() => {
  for (const install of installs) install.cleanup();
  rmSync(tarballDir, { recursive: true, force: true });
  rmSync(stateRoot, { recursive: true, force: true });
});

/** The project of that module type, installed once. */
function project(type: "module" | "commonjs"): { dir: string; result?: InstallResult } {
  const known = projects[type];
  if (known) return { dir: known };
  const result = installTarballs(tarballs, { type, offline: true });
  installs.push(result);
  expect(result.error).toBeUndefined();
  expect(result.ok).toBe(true);
  projects[type] = result.project;
  return { dir: result.project, result };
}

const USE_SANDBOX = (load: string) => `${load}
const client = createSandboxClient({ provider: local({ root: ${JSON.stringify(stateRoot)}, isolation: "none" }) });
(async () => {
  const sandbox = await client.create();
  const result = await sandbox.commands.run(["echo", "hello from the packed packages"]);
  let pty = "no pty";
  try { await sandbox.pty.create({ cols: 80, rows: 24, onData() {} }); } catch (error) { pty = error.code + ": " + error.message; }
  let sqlite = "no store";
  try { await sqliteStore({ path: ":memory:" }).list({}); } catch (error) { sqlite = error.code + ": " + error.message; }
  await sandbox.destroy();
  await client.dispose();
  console.log(JSON.stringify({ stdout: result.stdout, exitCode: result.exitCode, pty, sqlite, isError: SandboxError.isInstance(new SandboxError("Provider", "x")) }));
})().catch((error) => { console.error(error); process.exit(1); });
`;

describe("core + provider-local + manager from tarballs, outside the monorepo, offline", () => {
  it("install with nothing native and nothing from a registry", () => {
    const { result } = project("module");
    expect(result?.nativeAddons).toEqual([]);
    expect(result?.packageCount).toBe(3);
  });

  for (const [type, kind, load] of [
    [
      "module",
      "mjs",
      'import { createSandboxClient, SandboxError } from "@sbox/core"; import { local } from "@sbox/provider-local"; import { sqliteStore } from "@sbox/manager";',
    ],
    [
      "commonjs",
      "cjs",
      'const { createSandboxClient, SandboxError } = require("@sbox/core"); const { local } = require("@sbox/provider-local"); const { sqliteStore } = require("@sbox/manager");',
    ],
  ] as const) {
    it(`a ${type} project uses them; pty and the sqlite store name the optional package to add`, () => {
      const run = runInProject(project(type).dir, kind, USE_SANDBOX(load));
      expect(run.stderr).toBe("");
      expect(run.status).toBe(0);
      const outcome = JSON.parse(run.stdout) as {
        stdout: string;
        exitCode: number;
        pty: string;
        sqlite: string;
        isError: boolean;
      };
      expect(outcome).toMatchObject({
        stdout: "hello from the packed packages\n",
        exitCode: 0,
        isError: true,
      });
      expect(outcome.pty).toMatch(
        /^NotSupported: .*needs the optional package node-pty, which is not installed: add it with npm i node-pty$/,
      );
      expect(outcome.sqlite).toMatch(
        /^NotSupported: .*needs the optional package better-sqlite3, which is not installed: add it with npm i better-sqlite3$/,
      );
    });
  }

  it("require() of every entry point works, subpaths included", () => {
    const run = runInProject(
      project("commonjs").dir,
      "cjs",
      'for (const id of ["@sbox/core", "@sbox/core/spec", "@sbox/provider-local", "@sbox/manager"]) console.log(id, Object.keys(require(id)).length > 0);',
    );
    expect(run.stderr).toBe("");
    expect(run.stdout.trim().split("\n")).toEqual([
      "@sbox/core true",
      "@sbox/core/spec true",
      "@sbox/provider-local true",
      "@sbox/manager true",
    ]);
  });
});
