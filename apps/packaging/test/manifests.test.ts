/**
 * One dependency model for @sbox/core, checked in the packed manifests (what npm users get, after pnpm
 * rewrote the workspace ranges): every library names core as a caret peer range, never as a dependency
 * pinned to one exact version; the CLI, an application, depends on its workspace packages by caret range.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { packageDir, packedManifest, packPackages, REPO_ROOT } from "../src/install-probe.js";

// Every published package under packages/ but core itself: a new library is held to the model without
// anyone remembering to list it here.
const LIBRARIES = readdirSync(join(REPO_ROOT, "packages")).filter((dir) => {
  if (dir === "core") return false;
  try {
    const manifest = JSON.parse(readFileSync(join(REPO_ROOT, "packages", dir, "package.json"), "utf8"));
    return manifest.private !== true;
  } catch {
    return false;
  }
});
const into = mkdtempSync(join(tmpdir(), "sbox-manifests-"));
afterAll(() => rmSync(into, { recursive: true, force: true }));

type Manifest = {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  exports?: Record<string, unknown>;
};

const coreVersion = (JSON.parse(readFileSync(join(packageDir("core"), "package.json"), "utf8")) as Manifest)
  .version;

describe("the packed manifests", () => {
  const manifests = new Map<string, Manifest>();
  it("pack", () => {
    for (const name of [...LIBRARIES, "cli", "core"]) {
      const [tarball] = packPackages([name], join(into, name));
      manifests.set(name, packedManifest(tarball!) as Manifest);
    }
  });

  for (const name of LIBRARIES) {
    it(`${name} names @sbox/core as the peer range ^${coreVersion}, not as a dependency`, () => {
      const manifest = manifests.get(name)!;
      expect(manifest.dependencies?.["@sbox/core"]).toBeUndefined();
      expect(manifest.peerDependencies?.["@sbox/core"]).toBe(`^${coreVersion}`);
    });
  }

  it("the CLI depends on its workspace packages by caret range; nothing is left as workspace:", () => {
    const cli = manifests.get("cli")!;
    for (const dependency of ["@sbox/core", "@sbox/manager", "@sbox/provider-local"]) {
      expect(cli.dependencies?.[dependency]).toMatch(/^\^\d+\.\d+\.\d+$/);
    }
    for (const manifest of manifests.values()) {
      const ranges = [
        ...Object.values(manifest.dependencies ?? {}),
        ...Object.values(manifest.peerDependencies ?? {}),
      ];
      expect(ranges.filter((range) => range.startsWith("workspace:"))).toEqual([]);
    }
  });

  it("native modules that serve one feature are optional peers of the libraries that use them", () => {
    const local = manifests.get("provider-local")!;
    expect(local.dependencies?.["node-pty"]).toBeUndefined();
    expect(local.peerDependenciesMeta?.["node-pty"]?.optional).toBe(true);
    const manager = manifests.get("manager")!;
    for (const native of ["better-sqlite3", "pg"]) {
      expect(manager.dependencies?.[native]).toBeUndefined();
      expect(manager.peerDependenciesMeta?.[native]?.optional).toBe(true);
    }
  });

  it("every library exports CommonJS and ESM, each with its own types", () => {
    for (const name of [...LIBRARIES, "core"]) {
      const root = manifests.get(name)!.exports?.["."] as Record<string, Record<string, string>>;
      expect(root.import).toMatchObject({
        types: expect.stringMatching(/\.d\.ts$/),
        default: expect.stringMatching(/\.js$/),
      });
      expect(root.require).toMatchObject({
        types: expect.stringMatching(/\.d\.cts$/),
        default: expect.stringMatching(/\.cjs$/),
      });
    }
  });
});

describe("the README's package table", () => {
  it("names every published package of the workspace", () => {
    const published: string[] = [];
    for (const group of ["packages", "apps"]) {
      for (const dir of readdirSync(join(REPO_ROOT, group))) {
        try {
          const manifest = JSON.parse(readFileSync(join(REPO_ROOT, group, dir, "package.json"), "utf8")) as {
            name: string;
            private?: boolean;
          };
          if (!manifest.private) published.push(manifest.name);
        } catch {
          // Not a package directory.
        }
      }
    }
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    const table = readme.slice(
      readme.indexOf("## Packages"),
      readme.indexOf("\n## ", readme.indexOf("## Packages") + 1),
    );
    expect(published.length).toBeGreaterThan(5);
    expect(published.filter((name) => !table.includes(`| \`${name}\` |`))).toEqual([]);
  });
});
