/**
 * `@sbox/tools/anthropic`: the sandbox tools as Anthropic tool definitions for `messages.create`, with a
 * runner for `tool_use` blocks, and as runnable tools for the SDK's `toolRunner`. Needs `@anthropic-ai/sdk`.
 */
export type { AnthropicTools } from "./anthropic-tools.js";
export { createAnthropicTools } from "./anthropic-tools.js";
