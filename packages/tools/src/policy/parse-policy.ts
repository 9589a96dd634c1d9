/**
 * Validates a policy (for example one read from a JSON file) so a typo is a clear `Validation` error at
 * start, never a rule silently ignored.
 */
import { SandboxError } from "@sbox/core";
import { z } from "zod";
import { TOOL_NAMES, type ToolName } from "../tool-catalogue.js";
import { compileCommandPattern } from "./command-rules.js";
import type { ToolPolicy } from "./policy-types.js";

const action = z.enum(["allow", "deny", "ask"]);
const patterns = z.array(z.string().min(1)).optional();
const positive = z.number().int().positive().optional();

const policySchema = z.strictObject({
  destructive: z.boolean().optional(),
  tools: z
    .record(z.string(), action)
    .refine((tools) => Object.keys(tools).every((name) => (TOOL_NAMES as readonly string[]).includes(name)), {
      message: `tool names must be among: ${TOOL_NAMES.join(", ")}`,
    })
    .optional(),
  commands: z.strictObject({ deny: patterns, ask: patterns, allow: patterns }).optional(),
  paths: z
    .strictObject({
      root: z.string().regex(/^\//, "paths.root must be absolute").optional(),
      deny: patterns,
      allow: patterns,
      readOnly: patterns,
    })
    .optional(),
  limits: z
    .strictObject({
      maxOutputBytes: positive,
      maxOutputLines: positive,
      timeoutMs: positive,
      maxTimeoutMs: positive,
    })
    .optional(),
  errors: z.enum(["result", "throw"]).optional(),
});

/** Checks `value` is a valid {@link ToolPolicy}; throws a `Validation` `SandboxError` that names the problem. */
export function parseToolPolicy(value: unknown): ToolPolicy {
  const parsed = policySchema.safeParse(value);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join(".") || "(policy)"}: ${issue.message}`,
    );
    throw new SandboxError("Validation", `invalid tool policy: ${problems.join("; ")}`);
  }
  const policy = parsed.data as ToolPolicy & { tools?: Partial<Record<ToolName, "allow" | "deny" | "ask">> };
  for (const list of [policy.commands?.deny, policy.commands?.ask, policy.commands?.allow]) {
    for (const pattern of list ?? []) {
      try {
        compileCommandPattern(pattern);
      } catch (error) {
        throw new SandboxError("Validation", `invalid tool policy: ${(error as Error).message}`);
      }
    }
  }
  return policy;
}
