import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const core = (path: string) => fileURLToPath(new URL(`../core/src/${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests run against the core's sources, so they do not depend on a fresh build of its dist.
    alias: [
      { find: /^@sbox\/core\/spec$/, replacement: core("spec/index.ts") },
      { find: /^@sbox\/core$/, replacement: core("index.ts") },
    ],
  },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    // Tests share one Docker Engine (and one of them restarts it): run files one after another.
    fileParallelism: false,
  },
});
