import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const coreSource = (path: string) => fileURLToPath(new URL(`../core/src/${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@sbox\/core\/spec$/, replacement: coreSource("spec/index.ts") },
      { find: /^@sbox\/core$/, replacement: coreSource("index.ts") },
    ],
  },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
