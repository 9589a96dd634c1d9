import type { SandboxProvider } from "../spec/provider-spec.js";
import { isAutomaticEmulation } from "./capability-emulation.js";
import { CAPABILITY_DRIVER_METHODS, REQUIRED_DRIVER_METHODS } from "./capability-methods.js";
import { CAPABILITY_NAMES, type CapabilityName } from "./capability-names.js";

/** One disagreement between a provider's declaration and its driver methods. */
export interface ManifestProblem {
  capability?: CapabilityName | undefined;
  message: string;
}

/**
 * Checks a provider's declaration against its methods: the map is complete and valid, required methods
 * exist, every native capability has its methods, no driver method is left undeclared, and `emulated` is
 * only declared where the core can emulate.
 */
export function checkProviderManifest(provider: SandboxProvider): ManifestProblem[] {
  const problems: ManifestProblem[] = [];
  const record = provider as unknown as Record<string, unknown>;
  if (provider.specificationVersion !== "v1") {
    problems.push({
      message: `specificationVersion must be "v1", got ${String(provider.specificationVersion)}`,
    });
  }
  if (typeof provider.name !== "string" || !/^[a-z][a-z0-9-]*$/.test(provider.name)) {
    problems.push({
      message: `name must be lowercase letters, digits and dashes, got ${JSON.stringify(provider.name)}`,
    });
  }
  for (const method of REQUIRED_DRIVER_METHODS) {
    if (typeof record[method] !== "function")
      problems.push({ message: `required driver method ${method} is missing` });
  }
  const caps = (provider.capabilities ?? {}) as Record<string, unknown>;
  for (const name of CAPABILITY_NAMES) {
    const level = caps[name];
    if (level !== "native" && level !== "emulated" && level !== "unsupported") {
      problems.push({
        capability: name,
        message: `capability ${name} has no valid level (got ${String(level)})`,
      });
      continue;
    }
    const methods = CAPABILITY_DRIVER_METHODS[name];
    if (level === "native" && methods) {
      for (const method of methods.required) {
        if (typeof record[method] !== "function") {
          problems.push({
            capability: name,
            message: `${name} is declared native but driver method ${method} is missing`,
          });
        }
      }
    }
    if (level !== "native" && methods) {
      for (const method of [...methods.required, ...(methods.optional ?? [])]) {
        // doResume serves both stop and pause; it is declared by whichever of them is native.
        if (method === "doResume" && (caps.stop === "native" || caps.pause === "native")) continue;
        if (typeof record[method] === "function") {
          problems.push({
            capability: name,
            message: `driver method ${method} is implemented but ${name} is declared ${String(level)}`,
          });
        }
      }
    }
    if (level === "emulated" && !isAutomaticEmulation(name)) {
      problems.push({
        capability: name,
        message: `${name} is declared emulated but the core cannot emulate it automatically`,
      });
    }
  }
  for (const key of Object.keys(caps)) {
    if (!(CAPABILITY_NAMES as readonly string[]).includes(key)) {
      problems.push({ message: `unknown capability ${key} in the declaration` });
    }
  }
  const execStdin: unknown = provider.execStdin;
  if (execStdin !== undefined && execStdin !== "bytes" && execStdin !== "text" && execStdin !== "none") {
    problems.push({
      message: `execStdin must be "bytes", "text" or "none", got ${JSON.stringify(execStdin)}`,
    });
  }
  const execSignals: unknown = provider.execSignals;
  if (execSignals !== undefined && typeof execSignals !== "boolean") {
    problems.push({ message: `execSignals must be a boolean, got ${JSON.stringify(execSignals)}` });
  }
  return problems;
}
