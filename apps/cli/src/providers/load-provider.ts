import type { CapabilityFlags, CapabilityMap, SandboxProvider } from "@sbox/core";
import { SandboxError, toSandboxError } from "@sbox/core";
import { usageError } from "../args/usage-error.js";
import { findInstalledProviderPackages, importOptionalPackage } from "./import-package.js";
import { installHint } from "./install-hint.js";
import { KNOWN_PROVIDERS, type KnownProvider, knownProvider } from "./known-providers.js";

/** A provider factory as provider packages export it: `local(options)`, `docker(options)`. */
export type ProviderFactory = (options?: Record<string, unknown>) => SandboxProvider;

/** A provider package that was found and imported. */
export interface ProviderPackage {
  /** The `--provider` name. */
  readonly name: string;
  readonly packageName: string;
  readonly module: Record<string, unknown>;
  readonly factory: ProviderFactory;
}

/** The package that implements a provider name: a known one, `@sbox/provider-<name>`, or a package name. */
export function packageForProvider(name: string): {
  packageName: string;
  factoryExport: string;
  name: string;
} {
  const known = knownProvider(name);
  if (known) return known;
  if (/^[a-z0-9][a-z0-9-]*$/.test(name)) {
    return { name, packageName: `@sbox/provider-${name}`, factoryExport: camelCase(name) };
  }
  if (/^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i.test(name)) {
    const base = name.split("/").pop() ?? name;
    const short = base.replace(/^(sbox-)?provider-/, "");
    return { name: short, packageName: name, factoryExport: camelCase(short) };
  }
  throw usageError(`--provider: ${JSON.stringify(name)} is neither a provider name nor a package name`);
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j += 1) {
      const current = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length]!;
}

/** Why a bare provider name is unknown: the known names (the closest first, when it looks like a typo). */
export function unknownProviderMessage(name: string): string {
  const names = KNOWN_PROVIDERS.map((provider) => provider.name);
  const closest = names
    .map((candidate) => ({ candidate, distance: editDistance(name, candidate) }))
    .sort((a, b) => a.distance - b.distance)[0];
  const hint = closest && closest.distance <= 2 ? `did you mean "${closest.candidate}"? ` : "";
  return `unknown provider ${JSON.stringify(name)}: ${hint}the providers are ${names.join(", ")} (any other installed @sbox/provider-<name> is found too, or name a provider package: --provider @scope/package)`;
}

function camelCase(text: string): string {
  return text.replace(/-([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());
}

function factoryOf(module: Record<string, unknown>, exportName: string): ProviderFactory | undefined {
  for (const key of [exportName, "default", "createProvider"]) {
    const candidate = module[key];
    if (typeof candidate === "function") return candidate as ProviderFactory;
  }
  return undefined;
}

/** Imports the package of a provider; `NotFound`-free: a missing package is a clear error naming the install. */
export async function loadProviderPackage(name: string, cwd: string): Promise<ProviderPackage> {
  const target = packageForProvider(name);
  const outcome = await importOptionalPackage(target.packageName, cwd);
  if (outcome.status === "missing") {
    if (!knownProvider(name) && !name.includes("/")) {
      // A bare name that is none of ours: there is no package to suggest, only the names that exist.
      throw new SandboxError("Validation", unknownProviderMessage(name), { retryable: false });
    }
    throw new SandboxError(
      "Validation",
      `provider "${name}" is not installed: ${installHint(target.packageName, cwd)}, or choose another with --provider`,
      { retryable: false },
    );
  }
  if (outcome.status === "broken") throw outcome.error;
  const factory = factoryOf(outcome.module, target.factoryExport);
  if (!factory) {
    throw new SandboxError(
      "Validation",
      `${target.packageName} exports no provider factory (expected a function named ${target.factoryExport} or a default export)`,
      { retryable: false },
    );
  }
  return { name: target.name, packageName: target.packageName, module: outcome.module, factory };
}

/** Builds the provider; a factory that throws (missing credentials...) becomes a SandboxError. */
export function instantiateProvider(pkg: ProviderPackage, options: Record<string, unknown>): SandboxProvider {
  try {
    const provider = Object.keys(options).length === 0 ? pkg.factory() : pkg.factory(options);
    if (typeof provider !== "object" || provider === null || typeof provider.doCreate !== "function") {
      throw new SandboxError("Validation", `${pkg.packageName}: the factory did not return a provider`, {
        retryable: false,
      });
    }
    return provider;
  } catch (error) {
    throw toSandboxError(error, {
      provider: pkg.name,
      operation: `provider ${pkg.name}`,
      fallbackCode: "Validation",
    });
  }
}

/** One provider as `caps` and `doctor` see it: installed or not, and its declaration when it loads. */
export interface DiscoveredProvider {
  readonly name: string;
  readonly packageName: string;
  readonly known: KnownProvider | undefined;
  readonly status: "installed" | "missing" | "broken";
  /** Set when installed and the declaration could be read. */
  readonly capabilities?: CapabilityMap | undefined;
  readonly flags?: CapabilityFlags | undefined;
  /** Why the declaration could not be read (broken package, factory needs options). */
  readonly problem?: string | undefined;
  readonly package?: ProviderPackage | undefined;
}

/**
 * Every provider the CLI can see: the known ones (installed or not) and any other installed
 * `@sbox/provider-*` package. Fails softly: a package that does not load is reported, not thrown.
 */
export async function discoverProviders(cwd: string): Promise<DiscoveredProvider[]> {
  const targets = new Map<string, { name: string; packageName: string; factoryExport: string }>();
  for (const known of KNOWN_PROVIDERS) targets.set(known.packageName, known);
  for (const packageName of findInstalledProviderPackages(cwd)) {
    if (!targets.has(packageName)) targets.set(packageName, packageForProvider(packageName));
  }
  const results: DiscoveredProvider[] = [];
  for (const target of targets.values()) {
    const known = knownProvider(target.name);
    const outcome = await importOptionalPackage(target.packageName, cwd);
    if (outcome.status !== "loaded") {
      results.push({
        name: target.name,
        packageName: target.packageName,
        known,
        status: outcome.status,
        ...(outcome.status === "broken" ? { problem: outcome.error.message } : {}),
      });
      continue;
    }
    const factory = factoryOf(outcome.module, target.factoryExport);
    const pkg = factory ? { ...target, module: outcome.module, factory } : undefined;
    const declaration = readDeclaration(outcome.module, target, pkg);
    results.push({
      name: target.name,
      packageName: target.packageName,
      known,
      status: "installed",
      package: pkg,
      ...declaration,
    });
  }
  return results;
}

/**
 * The capability declaration of a provider package: the `capabilities` of a provider built with default
 * options (which reflects this machine, e.g. local without bwrap), else an exported `<name>Capabilities`
 * map (for providers whose factory needs credentials).
 */
function readDeclaration(
  module: Record<string, unknown>,
  target: { name: string; factoryExport: string },
  pkg: ProviderPackage | undefined,
): { capabilities?: CapabilityMap; flags?: CapabilityFlags; problem?: string } {
  let problem = pkg ? undefined : "the package exports no provider factory";
  if (pkg) {
    try {
      const provider = pkg.factory();
      // Only the declaration is read; release whatever the factory opened.
      provider.doDispose?.().catch(() => {});
      if (isCapabilityMap(provider.capabilities))
        return { capabilities: provider.capabilities, flags: provider.flags };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      problem = `could not build the provider with default options: ${message.split("\n")[0]}`;
    }
  }
  const exported = module[`${target.factoryExport}Capabilities`];
  const exportedFlags = module[`${target.factoryExport}Flags`];
  if (isCapabilityMap(exported)) {
    return isFlags(exportedFlags)
      ? { capabilities: exported, flags: exportedFlags }
      : { capabilities: exported };
  }
  return { problem: problem ?? "no capability declaration found" };
}

function isCapabilityMap(value: unknown): value is CapabilityMap {
  return typeof value === "object" && value !== null && "streaming" in value && "pty" in value;
}

function isFlags(value: unknown): value is CapabilityFlags {
  return typeof value === "object" && value !== null && "exitCodeNative" in value;
}
