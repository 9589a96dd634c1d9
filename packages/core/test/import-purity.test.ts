/**
 * Importing @sbox/core must do no I/O and pull in no dependency: the built entry points import only
 * their own chunks, and loading them with every I/O primitive booby-trapped succeeds.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";

const dist = join(import.meta.dirname, "..", "dist");
const pkg = JSON.parse(readFileSync(join(import.meta.dirname, "..", "package.json"), "utf8"));

describe("importing @sbox/core", () => {
  test("the package has no runtime dependencies", () => {
    expect(pkg.dependencies ?? {}).toEqual({});
    expect(pkg.peerDependencies ?? {}).toEqual({});
  });

  test("the built files import nothing but their own chunks", () => {
    expect(existsSync(dist), "run the build first (pnpm build)").toBe(true);
    const files = readdirSync(dist, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".js"));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const source = readFileSync(join(dist, file), "utf8");
      const specifiers = [
        ...source.matchAll(
          /(?:^|[\s;])(?:import|export)\s[^"']*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/gm,
        ),
      ].map((m) => m[1] ?? m[2]);
      for (const specifier of specifiers)
        expect(specifier, `${file} imports ${specifier}`).toMatch(/^\.\.?\//);
    }
  });

  test("loading both entry points performs no file, network or process I/O", () => {
    const trap = `
      const fail = (name) => function () { throw new Error("I/O at import time: " + name); };
      const fs = require("node:fs"), net = require("node:net"), cp = require("node:child_process"), http = require("node:http");
      for (const k of ["readFile","readFileSync","writeFile","writeFileSync","open","openSync","readdir","readdirSync","stat","statSync","mkdir","mkdirSync"]) fs[k] = fail("fs." + k);
      for (const k of ["spawn","exec","execFile","fork","spawnSync","execSync"]) cp[k] = fail("child_process." + k);
      net.connect = net.createConnection = fail("net.connect"); http.request = http.get = fail("http.request");
      globalThis.fetch = fail("fetch");
    `;
    const script = `${trap}
      import(${JSON.stringify(join(dist, "index.js"))})
        .then(() => import(${JSON.stringify(join(dist, "spec", "index.js"))}))
        .then((m) => { if (typeof m.defineProvider !== "function") throw new Error("spec entry incomplete"); console.log("clean"); })
        .catch((e) => { console.error(e.message); process.exit(1); });`;
    const run = spawnSync(process.execPath, ["-e", script], { encoding: "utf8" });
    expect(run.stderr).toBe("");
    expect(run.stdout.trim()).toBe("clean");
  });
});
