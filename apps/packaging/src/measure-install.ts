/**
 * Measures what a user pays to install packages from their packed tarballs into a project outside the
 * monorepo: wall time, size of node_modules, and the native addons compiled. Every run uses a fresh npm
 * cache, so two runs (before and after a change) download the same.
 *
 *   node apps/packaging/dist/measure-install.js [--json] [package-dir-name ...]
 *
 * Default packages: core provider-local provider-docker manager.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { installTarballs, packPackages } from "./install-probe.js";

const args = process.argv.slice(2);
const json = args.includes("--json");
const names = args.filter((arg) => !arg.startsWith("--"));
const packages = names.length > 0 ? names : ["core", "provider-local", "provider-docker", "manager"];

const tarballDir = mkdtempSync(join(tmpdir(), "sbox-tarballs-"));
try {
  const result = installTarballs(packPackages(packages, tarballDir));
  const summary = {
    packages,
    ok: result.ok,
    seconds: result.seconds,
    nodeModulesMB: result.nodeModulesMB,
    packageCount: result.packageCount,
    nativeAddons: result.nativeAddons,
    ...(result.error ? { error: result.error } : {}),
  };
  result.cleanup();
  if (json) console.log(JSON.stringify(summary));
  else {
    console.log(`installed ${packages.join(", ")} from tarballs: ${summary.ok ? "ok" : "FAILED"}`);
    console.log(
      `  ${summary.seconds} s, node_modules ${summary.nodeModulesMB} MB, ${summary.packageCount} packages`,
    );
    for (const native of summary.nativeAddons) {
      const how = native.compiled ? "compiled" : native.prebuilt ? "prebuilt binary" : "not built";
      console.log(`  native addon ${native.name}: ${how}`);
    }
    if (summary.nativeAddons.length === 0) console.log("  no native addon installed");
    if (result.error) console.log(result.error);
  }
  process.exitCode = summary.ok ? 0 : 1;
} finally {
  rmSync(tarballDir, { recursive: true, force: true });
}
