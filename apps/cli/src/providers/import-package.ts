import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { SandboxError } from "@sbox/core";

/** The outcome of importing an optional package. */
export type ImportOutcome =
  | { readonly status: "loaded"; readonly module: Record<string, unknown> }
  | { readonly status: "missing" }
  | { readonly status: "broken"; readonly error: SandboxError };

function isMissingPackage(error: unknown, packageName: string): boolean {
  const e = error as { code?: unknown; message?: unknown };
  return (
    (e?.code === "ERR_MODULE_NOT_FOUND" || e?.code === "MODULE_NOT_FOUND") &&
    typeof e.message === "string" &&
    e.message.includes(`'${packageName}'`)
  );
}

/** The ESM entry file of a package directory, from `exports["."]` (import/default) or `main`. */
function entryOf(packageDir: string): string | undefined {
  const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as {
    exports?: unknown;
    main?: unknown;
  };
  const pick = (target: unknown): string | undefined => {
    if (typeof target === "string") return target;
    if (typeof target === "object" && target !== null) {
      const conditions = target as Record<string, unknown>;
      for (const key of ["import", "node", "default"]) {
        const found = pick(conditions[key]);
        if (found) return found;
      }
    }
    return undefined;
  };
  let exportsField = manifest.exports;
  if (typeof exportsField === "object" && exportsField !== null && "." in exportsField) {
    exportsField = (exportsField as Record<string, unknown>)["."];
  }
  const relative = pick(exportsField) ?? (typeof manifest.main === "string" ? manifest.main : undefined);
  return relative ? resolve(packageDir, relative) : undefined;
}

/** Directories `node_modules/<name>` from `start` up to the filesystem root. */
function packageDirsUpFrom(start: string, packageName: string): string[] {
  const found: string[] = [];
  let dir = resolve(start);
  for (;;) {
    const candidate = join(dir, "node_modules", packageName);
    if (existsSync(join(candidate, "package.json"))) found.push(candidate);
    const parent = dirname(dir);
    if (parent === dir) return found;
    dir = parent;
  }
}

/**
 * Imports an optional package: first as the CLI itself would resolve it (its dependencies, a global
 * install next to it), then from the `node_modules` of the working directory and its parents, so that a
 * provider installed in the user's project is found too. Absence is an outcome, not an error.
 */
export async function importOptionalPackage(packageName: string, cwd: string): Promise<ImportOutcome> {
  try {
    return { status: "loaded", module: (await import(packageName)) as Record<string, unknown> };
  } catch (error) {
    if (!isMissingPackage(error, packageName))
      return { status: "broken", error: brokenError(packageName, error) };
  }
  for (const dir of packageDirsUpFrom(cwd, packageName)) {
    try {
      const entry = entryOf(dir);
      if (!entry) continue;
      return {
        status: "loaded",
        module: (await import(pathToFileURL(entry).href)) as Record<string, unknown>,
      };
    } catch (error) {
      return { status: "broken", error: brokenError(packageName, error) };
    }
  }
  return { status: "missing" };
}

function brokenError(packageName: string, error: unknown): SandboxError {
  const detail = error instanceof Error ? error.message.split("\n")[0] : String(error);
  return new SandboxError("Provider", `${packageName} is installed but failed to load: ${detail}`, {
    cause: error,
    retryable: false,
  });
}

/**
 * Names of installed `@sbox/provider-*` packages visible from the CLI's own location and from `cwd`
 * (the directory names under `node_modules/@sbox`).
 */
export function findInstalledProviderPackages(cwd: string): string[] {
  const names = new Set<string>();
  const starts = [dirname(fileURLToPath(import.meta.url)), cwd];
  for (const start of starts) {
    let dir = resolve(start);
    for (;;) {
      const scope = join(dir, "node_modules", "@sbox");
      if (existsSync(scope)) {
        for (const entry of safeReaddir(scope)) {
          if (entry.startsWith("provider-")) names.add(`@sbox/${entry}`);
        }
      }
      const parent = dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  return [...names].sort();
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
