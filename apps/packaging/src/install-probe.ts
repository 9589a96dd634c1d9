import { execFileSync, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The root of the repository (this file is apps/packaging/src/ or apps/packaging/dist/). */
export const REPO_ROOT: string = resolve(fileURLToPath(new URL(".", import.meta.url)), "../../..");

/** The directory of a workspace package by its directory name (`core`, `provider-local`, `cli`). */
export function packageDir(name: string): string {
  for (const group of ["packages", "apps"]) {
    const dir = join(REPO_ROOT, group, name);
    if (existsSync(join(dir, "package.json"))) return dir;
  }
  throw new Error(`no workspace package ${name}`);
}

/** Packs workspace packages with `pnpm pack` (workspace ranges rewritten as publishing does) into `into`. */
export function packPackages(names: readonly string[], into: string): string[] {
  mkdirSync(into, { recursive: true });
  const before = new Set(readdirSync(into));
  for (const name of names) {
    const dir = packageDir(name);
    // A tarball without its build would test nothing a user gets.
    if (!existsSync(join(dir, "dist"))) throw new Error(`${dir}/dist is missing: run pnpm build first`);
    execFileSync("pnpm", ["pack", "--pack-destination", into], { cwd: dir, stdio: "ignore" });
  }
  return readdirSync(into)
    .filter((file) => file.endsWith(".tgz") && !before.has(file))
    .map((file) => join(into, file));
}

/** The package.json inside a packed tarball. */
export function packedManifest(tarball: string): Record<string, unknown> {
  return JSON.parse(execFileSync("tar", ["-xOzf", tarball, "package/package.json"], { encoding: "utf8" }));
}

/** Bytes under `dir`, without following symlinks. */
function sizeOf(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isSymbolicLink()) continue;
    total += entry.isDirectory() ? sizeOf(path) : statSync(path).size;
  }
  return total;
}

/** Every installed package directory under a node_modules (scoped and nested ones too). */
export function installedPackages(modules: string): string[] {
  const found: string[] = [];
  if (!existsSync(modules)) return found;
  for (const entry of readdirSync(modules, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith(".")) continue;
    const dir = join(modules, entry.name);
    if (entry.name.startsWith("@")) {
      for (const scoped of readdirSync(dir, { withFileTypes: true })) {
        if (scoped.isDirectory())
          found.push(join(dir, scoped.name), ...installedPackages(join(dir, scoped.name, "node_modules")));
      }
    } else {
      found.push(dir, ...installedPackages(join(dir, "node_modules")));
    }
  }
  return found;
}

/** Files under a package directory (its own node_modules left out) whose name satisfies `test`. */
function filesIn(dir: string, test: (name: string) => boolean, found: string[] = []): string[] {
  if (!existsSync(dir)) return found;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "node_modules") continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) filesIn(path, test, found);
    else if (test(entry.name)) found.push(path);
  }
  return found;
}

/** An installed package with a native addon (a binding.gyp), and whether the install compiled it. */
export interface NativeAddon {
  readonly name: string;
  /** A `.node` file was built under `build/` during the install. */
  readonly compiled: boolean;
  /** The package ships a prebuilt `.node` under `prebuilds/`. */
  readonly prebuilt: boolean;
}

/** What installing some packed packages into a fresh project cost. */
export interface InstallResult {
  readonly ok: boolean;
  readonly seconds: number;
  readonly nodeModulesMB: number;
  readonly packageCount: number;
  readonly nativeAddons: readonly NativeAddon[];
  /** The last lines npm printed on failure. */
  readonly error?: string | undefined;
  /** The project directory (removed by `cleanup`). */
  readonly project: string;
  cleanup(): void;
}

/**
 * Installs tarballs into a fresh npm project under the system temp directory (outside the monorepo, so
 * nothing of the workspace is found), with a fresh npm cache so that runs compare. `offline` forbids the
 * registry: every dependency must then come from the tarballs.
 */
export function installTarballs(
  tarballs: readonly string[],
  options: { type?: "module" | "commonjs" | undefined; offline?: boolean | undefined } = {},
): InstallResult {
  const work = mkdtempSync(join(tmpdir(), "sbox-install-"));
  const project = join(work, "project");
  mkdirSync(project);
  writeFileSync(
    join(project, "package.json"),
    `${JSON.stringify({ name: "sbox-install-probe", version: "1.0.0", private: true, type: options.type ?? "module" }, null, 2)}\n`,
  );
  const started = Date.now();
  const install = spawnSync(
    "npm",
    [
      "install",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      "--cache",
      join(work, "npm-cache"),
      ...(options.offline ? ["--offline"] : []),
      ...tarballs,
    ],
    // node-gyp cannot download headers here; a user who builds addons sets this too.
    { cwd: project, encoding: "utf8", env: { npm_config_nodedir: "/usr", ...process.env } },
  );
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  const modules = join(project, "node_modules");
  const nativeAddons: NativeAddon[] = [];
  for (const dir of installedPackages(modules)) {
    if (filesIn(dir, (name) => name === "binding.gyp").length === 0) continue;
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name: string };
    const addons = filesIn(dir, (name) => name.endsWith(".node"));
    nativeAddons.push({
      name: manifest.name,
      compiled: addons.some((path) => path.includes("/build/")),
      prebuilt: addons.some((path) => path.includes("/prebuilds/")),
    });
  }
  return {
    ok: install.status === 0,
    seconds,
    nodeModulesMB: existsSync(modules) ? Math.round(sizeOf(modules) / 1e5) / 10 : 0,
    packageCount: installedPackages(modules).length,
    nativeAddons,
    ...(install.status === 0 ? {} : { error: install.stderr.trim().split("\n").slice(-8).join("\n") }),
    project,
    cleanup: () => rmSync(work, { recursive: true, force: true }),
  };
}

/** Runs a script with Node in the project (`.cjs` or `.mjs` by `kind`); its exit status and output. */
export function runInProject(
  project: string,
  kind: "cjs" | "mjs",
  source: string,
  env: Record<string, string> = {},
): { status: number | null; stdout: string; stderr: string } {
  const file = join(project, `probe-${Date.now()}-${Math.random().toString(16).slice(2)}.${kind}`);
  writeFileSync(file, source);
  const run = spawnSync(process.execPath, [file], {
    cwd: project,
    encoding: "utf8",
    timeout: 120_000,
    env: { ...process.env, ...env },
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}
