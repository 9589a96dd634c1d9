/**
 * `@sbox/tools`: any sbox sandbox as the tools of an AI agent. One framework-neutral tool set with a
 * fail-closed policy, audit and output limits; adapters per framework live in subpaths
 * (`@sbox/tools/ai-sdk`, `/openai-agents`, `/anthropic`, `/langchain`, `/mastra`).
 */

export type { SandboxToolInfo, SandboxToolsOptions } from "./create-sandbox-tools.js";
export {
  createSandboxTools,
  describeSandboxTools,
  isSandboxToolSet,
  sandboxOfToolSet,
} from "./create-sandbox-tools.js";
export type { BoundedText, OutputBudget } from "./output/bounded-output.js";
export { BoundedOutput, boundText } from "./output/bounded-output.js";
export type { CommandDecision, CommandRules, PolicyAction } from "./policy/command-rules.js";
export { CommandPolicy } from "./policy/command-rules.js";
export { parseToolPolicy } from "./policy/parse-policy.js";
export type { PathAccess, PathRules } from "./policy/path-rules.js";
export type {
  ApprovalHook,
  ApprovalRequest,
  AuditHook,
  PolicyDecision,
  ToolAuditEvent,
  ToolLimits,
  ToolPolicy,
} from "./policy/policy-types.js";
export type { ParsedShell, ShellCommand, ShellWord } from "./policy/shell-parse.js";
export { parseShell } from "./policy/shell-parse.js";
export { POLICY_DENIED } from "./tool-call.js";
export type { ToolCatalogueEntry, ToolName, ToolRisk } from "./tool-catalogue.js";
export { isToolName, TOOL_CATALOGUE, TOOL_NAMES } from "./tool-catalogue.js";
export type {
  JsonSchemaObject,
  SandboxTool,
  SandboxToolSet,
  ToolAnnotations,
  ToolCallOptions,
  ToolResult,
} from "./tool-types.js";
export type * from "./tools/tool-inputs.js";
