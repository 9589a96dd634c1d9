import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

/** A package of this workspace that may be a provider. */
export interface WorkspacePackage {
  name: string;
  /** Absolute directory. */
  dir: string;
  /** Absolute path of its built ESM entry, or undefined when it has none. */
  entry: string | undefined;
  /** Whether the entry file exists (the package was built). */
  built: boolean;
}

/** The directory holding pnpm-workspace.yaml, searched upwards from `start`. */
export function findRepoRoot(start: string): string {
  let dir = start;
  for (;;) {
    if (existsSync(join(dir, "pnpm-workspace.yaml"))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no pnpm-workspace.yaml above ${start}`);
    dir = parent;
  }
}

function entryOf(manifest: { exports?: unknown; main?: unknown }): string | undefined {
  const root = (manifest.exports as Record<string, unknown> | undefined)?.["."];
  if (typeof root === "string") return root;
  const conditions = root as { import?: unknown; default?: unknown } | undefined;
  if (typeof conditions?.import === "string") return conditions.import;
  if (typeof conditions?.default === "string") return conditions.default;
  return typeof manifest.main === "string" ? manifest.main : undefined;
}

/** Packages under `packages/` and `examples/` (where providers live), read from their package.json. */
export function workspacePackages(root: string): WorkspacePackage[] {
  const found: WorkspacePackage[] = [];
  for (const group of ["packages", "examples"]) {
    const base = join(root, group);
    if (!existsSync(base)) continue;
    for (const name of readdirSync(base).sort()) {
      const manifestPath = join(base, name, "package.json");
      if (!existsSync(manifestPath)) continue;
      const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as {
        name?: unknown;
        exports?: unknown;
        main?: unknown;
      };
      if (typeof manifest.name !== "string") continue;
      const relative = entryOf(manifest);
      const entry = relative ? join(base, name, relative) : undefined;
      found.push({
        name: manifest.name,
        dir: join(base, name),
        entry,
        built: entry !== undefined && existsSync(entry),
      });
    }
  }
  return found;
}
