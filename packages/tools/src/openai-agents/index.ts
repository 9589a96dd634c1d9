/**
 * `@sbox/tools/openai-agents`: the sandbox tools as OpenAI Agents SDK function tools, plus `Shell` and
 * `Editor` implementations for its `shellTool` and `applyPatchTool`. Needs `@openai/agents`.
 */
export { SandboxEditor } from "./openai-agents-editor.js";
export { SandboxShell } from "./openai-agents-shell.js";
export type { OpenAIAgentsToolsOptions } from "./openai-agents-tools.js";
export { createOpenAIAgentsTools } from "./openai-agents-tools.js";
