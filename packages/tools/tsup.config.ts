import { defineConfig } from "tsup";

export default defineConfig({
  entry: {
    index: "src/index.ts",
    "ai-sdk": "src/ai-sdk/index.ts",
    "openai-agents": "src/openai-agents/index.ts",
    anthropic: "src/anthropic/index.ts",
    langchain: "src/langchain/index.ts",
    mastra: "src/mastra/index.ts",
  },
  format: ["esm", "cjs"],
  dts: true,
  clean: true,
  sourcemap: true,
  target: "node20",
});
