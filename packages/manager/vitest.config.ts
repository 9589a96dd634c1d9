import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const core = (path: string): string => fileURLToPath(new URL(`../core/src/${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests run against core's sources, so they never see a stale build.
    alias: [
      { find: /^@sbox\/core\/spec$/, replacement: core("spec/index.ts") },
      { find: /^@sbox\/core$/, replacement: core("index.ts") },
    ],
  },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
