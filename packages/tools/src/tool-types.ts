import type { CapabilityLevel, CapabilityMap, CapabilityName } from "@sbox/core";
import type { z } from "zod";
import type { PolicyDecision, ToolPolicy } from "./policy/policy-types.js";
import type { TOOL_CATALOGUE, ToolName, ToolRisk } from "./tool-catalogue.js";
import type { ToolInputs } from "./tools/tool-inputs.js";

/** MCP-style hints about what a tool does (the Model Context Protocol's `ToolAnnotations`). */
export interface ToolAnnotations {
  readonly title: string;
  /** The tool changes nothing. */
  readonly readOnlyHint: boolean;
  /** The tool may destroy data or weaken the sandbox. */
  readonly destructiveHint: boolean;
  /** Repeating a call with the same input changes nothing more. */
  readonly idempotentHint: boolean;
  /** The tool reaches beyond the sandbox (network settings, exposed ports). */
  readonly openWorldHint: boolean;
}

/** A JSON Schema object describing a tool's input. */
export type JsonSchemaObject = { readonly type: "object"; readonly [key: string]: unknown };

/** What a tool call returns: always a result the model can read, never a throw (unless the policy says so). */
export interface ToolResult<TData = unknown> {
  /** Whether the call did what was asked. */
  readonly ok: boolean;
  /** The tool. */
  readonly tool: ToolName;
  /** What the model reads: bounded by the output limits. */
  readonly text: string;
  /** Structured output (bounded like `text`), when the call succeeded or partly ran. */
  readonly data?: TData | undefined;
  /** Why the call failed: `PolicyDenied`, `Validation`, or a `SandboxError` code such as `Timeout`. */
  readonly error?: { readonly code: string; readonly message: string } | undefined;
  /** Whether output was cut to fit the limits. */
  readonly truncated: boolean;
}

/** Per-call options. */
export interface ToolCallOptions {
  /** Abort the call (the command's process tree is killed). */
  signal?: AbortSignal | undefined;
  /** The framework's id of this call, passed to the approval and audit hooks. */
  callId?: string | undefined;
  /**
   * The framework already asked a human about this call (its own approval flow answered yes), so a rule
   * that says `ask` is satisfied. Deny rules still deny.
   */
  approved?: boolean | undefined;
}

/** One tool of a sandbox, ready for any framework. */
export interface SandboxTool<N extends ToolName = ToolName> {
  readonly name: N;
  /** Written for a model: what the tool does, its limits, how to use it well. */
  readonly description: string;
  readonly risk: ToolRisk;
  readonly annotations: ToolAnnotations;
  /** The input schema in zod (for frameworks that want zod). */
  readonly inputSchema: z.ZodType<ToolInputs[N]>;
  /** The same schema as JSON Schema. */
  readonly jsonSchema: JsonSchemaObject;
  /**
   * What the policy says about `input` without running anything that changes the sandbox (a path may be
   * resolved in it). Input that does not validate is `allow`: `execute` reports the validation error.
   */
  decide(input: unknown): Promise<PolicyDecision>;
  /** Validates, checks the policy, asks for approval, audits, runs, and bounds the output. */
  execute(input: unknown, options?: ToolCallOptions): Promise<ToolResult>;
}

type LevelOf<
  TCaps extends CapabilityMap,
  N extends ToolName,
> = (typeof TOOL_CATALOGUE)[N]["requires"] extends infer C
  ? C extends CapabilityName
    ? TCaps[C]
    : "native"
  : never;

type FieldOf<T, K extends string> = K extends keyof T ? T[K] : undefined;
type NonEmpty<T> = [T] extends [never] ? Record<never, never> : T;
type PolicyToolsOf<TPolicy> = NonEmpty<NonNullable<FieldOf<TPolicy, "tools">>>;
type PolicyEntry<TPolicy, N extends ToolName> = N extends keyof PolicyToolsOf<TPolicy>
  ? PolicyToolsOf<TPolicy>[N]
  : undefined;

/** `yes`, `no` or `maybe`: whether a tool is in the set for this policy. */
type EnabledBy<TPolicy, N extends ToolName> = [PolicyEntry<TPolicy, N>] extends ["deny"]
  ? "no"
  : "deny" extends PolicyEntry<TPolicy, N>
    ? "maybe"
    : (typeof TOOL_CATALOGUE)[N]["risk"] extends "destructive"
      ? [PolicyEntry<TPolicy, N>] extends ["allow" | "ask"]
        ? "yes"
        : [FieldOf<TPolicy, "destructive">] extends [true]
          ? "yes"
          : [FieldOf<TPolicy, "destructive">] extends [false | undefined]
            ? [PolicyEntry<TPolicy, N>] extends [undefined]
              ? "no"
              : "maybe"
            : "maybe"
      : "yes";

type AvailableIn<L extends CapabilityLevel> = [L] extends ["unsupported"]
  ? "no"
  : "unsupported" extends L
    ? "maybe"
    : "yes";

type Presence<TCaps extends CapabilityMap, TPolicy, N extends ToolName> =
  AvailableIn<LevelOf<TCaps, N>> extends "no"
    ? "no"
    : EnabledBy<TPolicy, N> extends "no"
      ? "no"
      : AvailableIn<LevelOf<TCaps, N>> extends "yes"
        ? EnabledBy<TPolicy, N>
        : "maybe";

/**
 * The tools of a sandbox with capability map `TCaps` under a policy of type `TPolicy`: a tool whose
 * capability is unsupported, or which the policy turns off, is absent from the type as at runtime.
 */
export type SandboxToolSet<
  TCaps extends CapabilityMap = CapabilityMap,
  TPolicy extends ToolPolicy = ToolPolicy,
> = {
  readonly [N in ToolName as Presence<TCaps, TPolicy, N> extends "yes" ? N : never]: SandboxTool<N>;
} & {
  readonly [N in ToolName as Presence<TCaps, TPolicy, N> extends "maybe" ? N : never]?: SandboxTool<N>;
};
