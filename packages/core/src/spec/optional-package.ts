import { SandboxError } from "../errors/sandbox-error.js";

/**
 * True when `error` (from `import(packageName)`) says that the package itself is not installed — not that
 * it is there and failed to load (a native addon built for another Node, a syntax error), which is a
 * different problem with a different fix.
 */
export function isMissingPackage(error: unknown, packageName: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return false;
  return (
    typeof message === "string" &&
    (message.includes(`'${packageName}'`) || message.includes(`"${packageName}"`))
  );
}

/**
 * The error for a feature whose optional package is missing or broken: names the package to add (and
 * what needs it), so a user who never uses the feature never has to install, or build, the package.
 *
 * ```ts
 * import("node-pty").catch((error) => { throw optionalPackageError(error, "node-pty", "pty", "local"); });
 * ```
 */
export function optionalPackageError(
  error: unknown,
  packageName: string,
  feature: string,
  provider?: string,
): SandboxError {
  if (isMissingPackage(error, packageName)) {
    return new SandboxError(
      "NotSupported",
      `${feature} needs the optional package ${packageName}, which is not installed: add it with npm i ${packageName}`,
      { cause: error, provider, retryable: false },
    );
  }
  const detail = error instanceof Error ? error.message.split("\n")[0] : String(error);
  return new SandboxError(
    "Provider",
    `${feature} needs the optional package ${packageName}, which is installed but failed to load (${detail}); reinstall it for this Node (npm rebuild ${packageName})`,
    { cause: error, provider, retryable: false },
  );
}
