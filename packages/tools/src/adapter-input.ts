/** What every framework adapter accepts: a sandbox (with tool options) or a tool set already made. */
import type { CapabilityMap, Sandbox } from "@sbox/core";
import { createSandboxTools, isSandboxToolSet, type SandboxToolsOptions } from "./create-sandbox-tools.js";
import type { ToolPolicy } from "./policy/policy-types.js";
import type { SandboxTool, SandboxToolSet } from "./tool-types.js";

/** A sandbox or the tool set of one. */
export type SandboxOrTools = Sandbox | SandboxToolSet;

/** The tool set an adapter's first argument stands for, as a type. */
export type ToolSetOf<T, TPolicy extends ToolPolicy> =
  T extends Sandbox<infer TCaps extends CapabilityMap> ? SandboxToolSet<TCaps, TPolicy> : T;

/** The tool set for `source`: made with `options` from a sandbox, or `source` itself. */
export function toolSetOf(source: SandboxOrTools, options: SandboxToolsOptions | undefined): SandboxToolSet {
  if (isSandboxToolSet(source)) return source;
  return createSandboxTools(source as Sandbox, options) as SandboxToolSet;
}

/** The tools of a set, in catalogue order. */
export function toolsOf(set: SandboxToolSet): SandboxTool[] {
  return Object.values(set as Record<string, SandboxTool>);
}
