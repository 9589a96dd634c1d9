/** The seam between the call pipeline and each tool's own logic. */
import type { Sandbox } from "@sbox/core";
import type { z } from "zod";
import type { CommandPolicy } from "../policy/command-rules.js";
import type { PathAccess, PathPolicy } from "../policy/path-rules.js";
import type { PolicyDecision } from "../policy/policy-types.js";
import type { ResolvedPath, SandboxPaths } from "../policy/sandbox-paths.js";
import type { ToolName } from "../tool-catalogue.js";
import type { ToolInputs } from "./tool-inputs.js";

/** Limits after defaults. */
export interface ResolvedLimits {
  readonly maxOutputBytes: number;
  readonly maxOutputLines: number;
  readonly timeoutMs: number;
  readonly maxTimeoutMs: number;
}

/** What a tool's check and run get. */
export interface ToolContext {
  readonly sandbox: Sandbox;
  readonly paths: SandboxPaths;
  readonly pathPolicy: PathPolicy;
  readonly commandPolicy: CommandPolicy;
  readonly limits: ResolvedLimits;
  /** Resolves `input` and checks it against the path rules (throws `PathDenied`). */
  checkPath(
    input: string | undefined,
    access: PathAccess,
    options?: { followLast?: boolean },
  ): Promise<ResolvedPath>;
}

/** The outcome of a tool's own policy check, plus what its run needs (e.g. resolved paths). */
export interface ToolCheck<TPlan> {
  readonly decision: PolicyDecision;
  readonly plan: TPlan;
}

/** What a tool's run produced. */
export interface ToolOutput {
  readonly text: string;
  readonly data?: unknown;
  readonly truncated?: boolean | undefined;
  /** A failure that still has output to show (e.g. a timed-out command): code and message. */
  readonly error?: { readonly code: string; readonly message: string } | undefined;
}

/** One tool's logic. */
export interface ToolDefinition<N extends ToolName, TPlan = undefined> {
  readonly name: N;
  readonly description: (context: { readonly sandbox: Sandbox; readonly limits: ResolvedLimits }) => string;
  readonly schema: (context: { readonly sandbox: Sandbox }) => z.ZodType<ToolInputs[N]>;
  /** The tool's own policy check (commands, paths); tools without one allow. */
  readonly check?: ((input: ToolInputs[N], context: ToolContext) => Promise<ToolCheck<TPlan>>) | undefined;
  readonly run: (
    input: ToolInputs[N],
    context: ToolContext,
    plan: TPlan,
    signal: AbortSignal,
  ) => Promise<ToolOutput>;
}

/** A definition of any tool. */
// biome-ignore lint/suspicious/noExplicitAny: the pipeline handles every tool through one shape
export type AnyToolDefinition = ToolDefinition<any, any>;

const ALLOW: PolicyDecision = { action: "allow", reason: "allowed" };

/** A check that allows, with a plan. */
export function allowWith<TPlan>(plan: TPlan): ToolCheck<TPlan> {
  return { decision: ALLOW, plan };
}
