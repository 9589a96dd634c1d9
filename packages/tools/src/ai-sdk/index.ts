/**
 * `@sbox/tools/ai-sdk`: the sandbox tools as an AI SDK tool map, and `createSandboxSession` implementing the
 * AI SDK's `Experimental_SandboxSession` for `generateText({ experimental_sandbox })`. Needs `ai` (>= 7).
 */

export type { SandboxSessionOptions } from "./ai-sdk-session.js";
export { createSandboxSession } from "./ai-sdk-session.js";
export type { AiSdkTools, AiSdkToolsOptions } from "./ai-sdk-tools.js";
export { createAiSdkToolApproval, createAiSdkTools } from "./ai-sdk-tools.js";
