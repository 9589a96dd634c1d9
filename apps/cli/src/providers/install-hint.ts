import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/** The directory of the pnpm workspace `cwd` lies in, if any (the nearest pnpm-workspace.yaml above it). */
function workspaceRoot(cwd: string): string | undefined {
  let dir = resolve(cwd);
  for (;;) {
    if (existsSync(join(dir, "pnpm-workspace.yaml"))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** The `packages:` globs of a pnpm-workspace.yaml (only the `dir/*` and `dir` forms are needed here). */
function workspaceGlobs(root: string): string[] {
  const globs: string[] = [];
  let inPackages = false;
  for (const line of readFileSync(join(root, "pnpm-workspace.yaml"), "utf8").split("\n")) {
    if (/^\S/.test(line)) inPackages = line.startsWith("packages:");
    const entry = inPackages ? /^\s+-\s+["']?([^"'#\s]+)/.exec(line) : null;
    if (entry) globs.push(entry[1]!);
  }
  return globs;
}

/** Where a package of the workspace `cwd` lies in lives, when it is one of its packages. */
export function workspacePackageDir(cwd: string, packageName: string): string | undefined {
  const root = workspaceRoot(cwd);
  if (!root) return undefined;
  for (const glob of workspaceGlobs(root)) {
    const base = join(root, glob.replace(/\/\*$/, ""));
    const dirs = glob.endsWith("/*")
      ? existsSync(base)
        ? readdirSync(base).map((name) => join(base, name))
        : []
      : [base];
    for (const dir of dirs) {
      try {
        const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: unknown };
        if (manifest.name === packageName) return dir;
      } catch {
        // Not a package directory.
      }
    }
  }
  return undefined;
}

/**
 * How to make a package available: inside a checkout where it is a workspace package, building the
 * workspace (not `npm i`, which would fetch a published copy); otherwise installing it.
 */
export function installHint(packageName: string, cwd: string): string {
  const dir = workspacePackageDir(cwd, packageName);
  if (dir) {
    return `${packageName} is a package of this workspace (${relative(resolve(cwd), dir) || "."}): run pnpm install && pnpm build`;
  }
  return `npm i ${packageName}`;
}
