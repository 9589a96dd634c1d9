import {
  CAPABILITY_DRIVER_METHODS,
  CAPABILITY_NAMES,
  CAPABILITY_NAMESPACES,
  type CapabilityName,
  checkProviderManifest,
  EMULATABLE_DRIVER_METHODS,
} from "@sbox/core/spec";
import { check, show } from "../assertions.js";
import type { ConformanceCase } from "../conformance-case.js";

const LEVELS = ["native", "emulated", "unsupported"];

/** The gated namespace each capability opens on a sandbox (core's table). */
export const NAMESPACE_OF: Partial<Record<CapabilityName, string>> = CAPABILITY_NAMESPACES;

/** Cases about the declaration itself. */
export function manifestCases(): ConformanceCase[] {
  return [
    {
      id: "manifest.declaration",
      title:
        "the declaration matches the driver: every capability has a valid level, every native capability has its driver methods, and no driver method is left undeclared",
      requires: [],
      async run(ctx) {
        const problems = checkProviderManifest(ctx.provider);
        check(
          problems.length === 0,
          `expected checkProviderManifest to report no problem, got ${problems.length}: ${problems.map((p) => p.message).join("; ")}`,
        );
      },
    },
    {
      id: "manifest.effective-capabilities",
      title:
        "the client reports all 25 capabilities with valid levels, never upgrades a declared level, reports no hidden method as native in primitives-only mode, and a sandbox's capabilities, can() and gated namespaces agree with it",
      requires: [],
      coreOnly: true,
      async run(ctx) {
        const effective = ctx.capabilities.map as Record<string, string>;
        const declared = ctx.provider.capabilities as Record<string, string>;
        for (const name of CAPABILITY_NAMES) {
          const level = effective[name];
          check(
            level !== undefined && LEVELS.includes(level),
            `expected capability ${name} to have a valid level, got ${show(level)}`,
          );
          if (declared[name] === "native") {
            check(
              level === "native" || (ctx.mode === "primitives-only" && level === "emulated"),
              `expected ${name}, declared native, to stay native (or become emulated in primitives-only mode), got ${level}`,
            );
          }
          if (declared[name] === "unsupported") {
            check(level !== "native", `expected ${name}, declared unsupported, not to be reported native`);
          }
          const methods = CAPABILITY_DRIVER_METHODS[name]?.required ?? [];
          if (
            ctx.mode === "primitives-only" &&
            methods.length > 0 &&
            methods.every((m) => EMULATABLE_DRIVER_METHODS.includes(m))
          ) {
            check(
              level !== "native",
              `expected ${name} not to be native in primitives-only mode (its driver methods are hidden), got native`,
            );
          }
        }
        const sandbox = await ctx.sharedSandbox();
        const own = sandbox.capabilities.map as Record<string, string>;
        for (const name of CAPABILITY_NAMES) {
          check(
            own[name] === effective[name],
            `expected sandbox.capabilities.map.${name} to be ${effective[name]} like the client's, got ${show(own[name])}`,
          );
          const supported = effective[name] !== "unsupported";
          check(
            sandbox.can(name) === supported,
            `expected sandbox.can(${show(name)}) to be ${supported} (level ${effective[name]})`,
          );
          const namespace = NAMESPACE_OF[name];
          if (namespace) {
            const value = (sandbox as unknown as Record<string, unknown>)[namespace];
            check(
              (value !== undefined) === supported,
              `expected sandbox.${namespace} to be ${supported ? "defined" : "undefined"} (${name} is ${effective[name]}), got ${value === undefined ? "undefined" : typeof value}`,
            );
          }
        }
        check(
          sandbox.files !== undefined && sandbox.commands !== undefined,
          "expected sandbox.files and sandbox.commands to be present",
        );
      },
    },
  ];
}
